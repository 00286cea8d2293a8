// Loading a profile's config.yaml: parse, substitute ${VAR}s, check against the schema, and turn
// every problem into one error that names the file, line and key (secrets shown as `***`).
import { readFileSync, statSync } from "node:fs";
import { type Document, isMap, LineCounter, parseDocument, type Scalar } from "yaml";
import { type ConfigError, commandLine, errorMessage } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { loadEnvFile, lookupVariable } from "../profile/env-file.js";
import { fileReadError } from "../profile/fs-errors.js";
import type { ProfilePaths } from "../profile/paths.js";
import { type GatewayKeySource, withDefaultGatewayKey } from "./gateway-key.js";
import { interpolate } from "./interpolate.js";
import { type ConfigProblem, configProblemsError, schemaProblems } from "./problems.js";
import { configSchema, defaultConfig, type TenaxConfig } from "./schema.js";
import { isSecretPath, readsSecretVariables, secretIn } from "./secrets.js";
import { forEachValueScalar, formatKeyPath, type KeyPath, keyPathAtOffset, locate } from "./yaml-nodes.js";

export interface LoadedConfig {
  config: TenaxConfig;
  /** "defaults" when the profile has no config.yaml. */
  source: "file" | "defaults";
  /** Things worth fixing that do not stop Tenax (for example a world-readable secret). */
  warnings: string[];
  /** The variables `${VAR}` in a secret key reads (src/config/profile-secrets.ts keeps them from tools). */
  secretVariables: string[];
  /** Where gateway.api_key came from ("none": no key yet, or auth: none). */
  gatewayKeySource: GatewayKeySource;
  /**
   * The config error for a value the schema took but the machine refuses (a host that does not
   * resolve): the file, line and key, as every config error names them.
   */
  problemAt(path: KeyPath, message: string, hint: string): ConfigError;
  /** The line of config.yaml that sets `path`; null when the file does not set it (its default holds). */
  lineOf(path: KeyPath): number | null;
}

/**
 * Load the profile's config. `${VAR}` reads `env` first, then the profile's `.env`; so does
 * gateway.api_key's default, `${TENAX_API_KEY}`, when config.yaml sets no key (and when there is no
 * config.yaml). Throws one ConfigError listing every problem found.
 */
export function loadConfig(paths: ProfilePaths, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const file = paths.config;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      const keyed = withDefaultGatewayKey(defaultConfig(), paths, env, loadEnvFile(paths.env));
      return {
        config: keyed.config,
        source: "defaults",
        warnings: [],
        secretVariables: [],
        gatewayKeySource: keyed.source,
        problemAt: (path, message, hint) =>
          configProblemsError(
            file,
            [{ line: 0, path: formatKeyPath(path), message: unset(file, message) }],
            hint,
          ),
        lineOf: () => null,
      };
    }
    throw fileReadError(error, file);
  }
  const fixHint = fixFileHint(paths);

  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const syntax = syntaxProblems(doc, lines, text);
  if (syntax.length > 0) throw configProblemsError(file, syntax, fixHint);
  const warnings = doc.warnings.map((w) => `${file}:${lines.linePos(w.pos[0]).line}: ${w.message}`);
  if (doc.contents !== null && !isMap(doc.contents)) {
    const { line } = locate(doc, lines, [], "value");
    const message = "expected a mapping of sections (model:, providers:, gateway:, ...)";
    throw configProblemsError(file, [{ line, path: "", message }], fixHint);
  }

  const dotenv = loadEnvFile(paths.env);
  const substitution = substituteVariables(doc, lines, (name) => lookupVariable(name, env, dotenv));
  const raw = toPlainData(doc, file, fixHint);
  const result = configSchema.safeParse(raw);
  const problems = [...substitution.problems];
  if (!result.success) {
    // A value whose ${VAR} failed was checked as "", so its schema complaint would only confuse.
    const failed = new Set(substitution.failedPaths.map(formatKeyPath));
    const checked = schemaProblems(result.error.issues, raw, doc, lines);
    problems.push(...checked.filter((p) => !failed.has(p.path)));
  }
  if (problems.length > 0 || !result.success) {
    const hints = [];
    if (substitution.missing.size > 0) hints.push(missingVariableHint([...substitution.missing], paths));
    if (problems.length > substitution.missingProblems) hints.push(fixHint);
    throw configProblemsError(file, problems, hints.join("\n"));
  }
  warnings.push(...permissionWarnings(paths, substitution.literalSecret));
  const verify = verifyIntervalWarning(result.data);
  if (verify !== null)
    warnings.push(`${file}:${locate(doc, lines, ["health", "integrity_interval"], "value").line}: ${verify}`);
  const keyed = withDefaultGatewayKey(result.data, paths, env, dotenv);
  return {
    config: keyed.config,
    source: "file",
    warnings,
    secretVariables: [...substitution.secretVariables],
    gatewayKeySource: keyed.source,
    problemAt: (path, message, hint) => {
      const { line } = locate(doc, lines, path, "value");
      const said = doc.hasIn(path) ? message : unset(file, message);
      return configProblemsError(file, [{ line, path: formatKeyPath(path), message: said }], hint);
    },
    lineOf: (path) => (doc.hasIn(path) ? locate(doc, lines, path, "value").line : null),
  };
}

/** A problem of a key the file does not set: its default is what failed. */
function unset(file: string, message: string): string {
  return `${message} (not set in ${file}: this is the default)`;
}

/** The document as plain data; aliases are expanded, but a flood of them is refused. */
function toPlainData(doc: Document, file: string, hint: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (error) {
    throw configProblemsError(file, [{ line: 1, path: "", message: `YAML: ${errorMessage(error)}` }], hint);
  }
}

function fixFileHint(paths: ProfilePaths): string {
  const command = tenaxCommand(paths.name, ["init", "--force"]);
  return `fix the file, or start over from a fresh commented config (the current one is kept as config.yaml.bak): ${command}`;
}

function missingVariableHint(names: string[], paths: ProfilePaths): string {
  return `set ${names.join(", ")} in the environment, or add a line ${names[0]}=... to ${paths.env}`;
}

/** Every duplicate key, and the first syntax error only: later ones are mostly its echoes. */
function syntaxProblems(doc: Document, lines: LineCounter, text: string): ConfigProblem[] {
  const firstSyntax = doc.errors.find((error) => error.code !== "DUPLICATE_KEY");
  const reported = doc.errors.filter((error) => error.code === "DUPLICATE_KEY" || error === firstSyntax);
  return reported.map((error) => {
    const { line, col } = lines.linePos(error.pos[0]);
    if (error.code === "DUPLICATE_KEY") {
      const path = keyPathAtOffset(doc, error.pos[0]);
      return {
        line,
        column: col,
        path: path ? formatKeyPath(path) : "",
        message: "duplicate key: each key may appear only once in a mapping",
      };
    }
    const source = text.split("\n")[line - 1] ?? "";
    const note = /[[{].*\$\{/.test(source) ? ` (inside { } or [ ], put a variable in quotes: "\${VAR}")` : "";
    return { line, column: col, path: "", message: `YAML syntax: ${error.message}${note}` };
  });
}

interface Substitution {
  problems: ConfigProblem[];
  failedPaths: KeyPath[];
  missing: Set<string>;
  /** How many of the problems are only unset variables (fixed in the environment, not the file). */
  missingProblems: number;
  /** A secret written in the file itself rather than taken from a variable. */
  literalSecret: boolean;
  /** Every variable a secret key's value reads. */
  secretVariables: Set<string>;
}

/**
 * Replace `${VAR}` in every string value scalar. An unquoted value made only of digits or
 * true/false after substitution becomes a number or boolean (so `port: ${PORT}` works); quote it
 * to keep it a string.
 */
function substituteVariables(
  doc: Document,
  lines: LineCounter,
  lookup: (name: string) => string | undefined,
): Substitution {
  const out: Substitution = {
    problems: [],
    failedPaths: [],
    missing: new Set(),
    missingProblems: 0,
    literalSecret: false,
    secretVariables: new Set(),
  };
  forEachValueScalar(doc, (scalar, path) => {
    if (typeof scalar.value !== "string") return;
    const secret = isSecretPath(path);
    const secretVariables = readsSecretVariables(path);
    const result = interpolate(scalar.value, (name) => {
      if (secretVariables) out.secretVariables.add(name);
      return lookup(name);
    });
    if (!result.ok) {
      for (const name of result.missing) out.missing.add(name);
      if (result.missing.length > 0) out.missingProblems++;
      out.problems.push({
        line: locate(doc, lines, path, "value").line,
        path: formatKeyPath(path),
        message: result.problem,
      });
      out.failedPaths.push(path);
      scalar.value = "";
      return;
    }
    if (secret && !result.substituted && result.value !== "" && secretIn(path, result.value) !== null)
      out.literalSecret = true;
    scalar.value = result.substituted ? retype(scalar, result.value) : result.value;
  });
  return out;
}

function retype(scalar: Scalar, value: string): unknown {
  if (scalar.type !== "PLAIN" || scalar.tag !== undefined) return value;
  if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/.test(value)) return Number(value);
  if (value === "true" || value === "false") return value === "true";
  return value;
}

/** Beyond this, damage to pages no write touches goes unseen longer than Tenax promises. */
const VERIFY_PROMISE_S = 300;

/**
 * `health.integrity_interval` set longer than the promise: most often the 1800 s that `tenax init`
 * wrote before the store was checked continuously, kept in an older config.yaml.
 */
function verifyIntervalWarning(config: TenaxConfig): string | null {
  const every = config.health.integrity_interval;
  if (every <= VERIFY_PROMISE_S) return null;
  return `health.integrity_interval: ${every} lets damage to pages no write touches go unseen for up to ${Math.round(every / 60)} min; 120 (the default) checks the whole store every 2 min within 1% of a core`;
}

function permissionWarnings(paths: ProfilePaths, literalSecret: boolean): string[] {
  const warnings: string[] = [];
  const chmod = (file: string) => commandLine(["chmod", "600", file]);
  if (literalSecret && readableByOthers(paths.config)) {
    warnings.push(
      `${paths.config} holds a secret (an API key, a token or a password) in plain text and other users can read it: run ${chmod(paths.config)}, or move it to ${paths.env} and write "\${NAME}" in its place`,
    );
  }
  if (readableByOthers(paths.env)) {
    warnings.push(`${paths.env} can be read by other users: run ${chmod(paths.env)}`);
  }
  return warnings;
}

function readableByOthers(file: string): boolean {
  try {
    return (statSync(file).mode & 0o044) !== 0;
  } catch {
    return false;
  }
}
