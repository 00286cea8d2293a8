// A snapshot's facts live in its commit message, so the repository alone says what every
// snapshot is: the reason on the first line, then one trailer per fact.

export interface SnapshotFacts {
  project: string;
  created_at: number;
  reason: string;
  files: number;
}

const MAX_REASON = 200;

/** One line of at most 200 characters; a snapshot always has some reason. */
export function cleanReason(reason: string): string {
  const line = reason.replace(/\s+/g, " ").trim();
  if (line === "") return "snapshot";
  return line.length > MAX_REASON ? `${line.slice(0, MAX_REASON - 1)}…` : line;
}

export function commitMessage(facts: SnapshotFacts): string {
  return [
    cleanReason(facts.reason),
    "",
    // JSON, because a folder name may hold a newline.
    `Tenax-Project: ${JSON.stringify(facts.project)}`,
    `Tenax-Created-At: ${facts.created_at}`,
    `Tenax-Files: ${facts.files}`,
    "",
  ].join("\n");
}

/** The facts of a commit message Tenax wrote, or null for anything else. */
export function parseCommitMessage(text: string): SnapshotFacts | null {
  const [reason = "", ...rest] = text.split("\n");
  const field = (name: string) => rest.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
  const project = parseProject(field("Tenax-Project"));
  const created = Number(field("Tenax-Created-At"));
  const files = Number(field("Tenax-Files"));
  if (project === null || !Number.isSafeInteger(created) || !Number.isSafeInteger(files)) return null;
  return { project, created_at: created, reason, files };
}

function parseProject(value: string | undefined): string | null {
  if (value === undefined) return null;
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === "string" ? parsed : null;
  } catch {
    return null;
  }
}
