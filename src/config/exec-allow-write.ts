// An "always" approval for a command pattern, written where the operator keeps the rest of the
// policy: appended to `tools.exec.allow` in the profile's config.yaml, the file's comments and
// layout kept, through a temp file and a rename (never half a file). A pattern already listed is
// not added twice. A config.yaml that does not parse is left alone: the approval still holds in
// this process, and the error says what to fix.
import { existsSync, readFileSync, statSync } from "node:fs";
import { isSeq, parseDocument } from "yaml";
import { TenaxError } from "../core/errors.js";
import { writeFileAtomic } from "../profile/atomic-write.js";

const ALLOW_PATH = ["tools", "exec", "allow"] as const;

/** Adds `pattern` to tools.exec.allow in `configFile`; false when it was listed already. */
export async function addExecAllowPattern(configFile: string, pattern: string): Promise<boolean> {
  const exists = existsSync(configFile);
  const text = exists ? readFileSync(configFile, "utf8") : "";
  const doc = parseDocument(text, { uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new TenaxError(
      "config_invalid",
      `cannot add "${pattern}" to tools.exec.allow: ${configFile} does not parse (${doc.errors[0]?.message ?? "YAML error"})`,
      { hint: "fix the file (tenax doctor shows where), then approve again or add the pattern by hand" },
    );
  }
  const listed = doc.getIn(ALLOW_PATH);
  if (isSeq(listed)) {
    if (listed.items.some((item) => String(doc.createNode(item).toJSON()) === pattern)) return false;
    doc.addIn(ALLOW_PATH, pattern);
  } else if (listed === undefined || listed === null) {
    doc.setIn(ALLOW_PATH, doc.createNode([pattern]));
  } else {
    throw new TenaxError(
      "config_invalid",
      `cannot add "${pattern}" to tools.exec.allow in ${configFile}: it is not a list`,
      { hint: "make tools.exec.allow a list of command patterns" },
    );
  }
  const mode = exists ? statSync(configFile).mode & 0o777 : 0o600;
  await writeFileAtomic(configFile, doc.toString(), mode);
  return true;
}
