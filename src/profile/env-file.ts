// A profile's optional `.env`: KEY=VALUE lines that `${VAR}` in config.yaml may read. The process
// environment always wins over `.env`, so a deployment can override a value without editing files.
// Errors name the file and line but never echo the line: `.env` holds secrets.
import { readFileSync } from "node:fs";
import { ConfigError } from "../core/errors.js";
import { fileReadError } from "./fs-errors.js";

const KEY_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const DOUBLE_QUOTE_ESCAPES: Record<string, string> = {
  n: "\n",
  r: "\r",
  t: "\t",
  '"': '"',
  "\\": "\\",
  $: "$",
};

/**
 * Parse `.env` text: blank lines and `#` comments are skipped, `export ` is allowed before a key,
 * values may be bare (a ` #` starts a trailing comment), 'single quoted' (taken literally) or
 * "double quoted" (with \n, \r, \t, \" and \\ escapes). A key given twice keeps its last value.
 */
export function parseEnvFile(text: string, file: string): Record<string, string> {
  const vars: Record<string, string> = {};
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const parsed = parseLine(line);
    if (typeof parsed === "string") throw envLineError(file, index + 1, parsed);
    vars[parsed.key] = parsed.value;
  });
  return vars;
}

/** Read and parse a profile's `.env`; a missing file is an empty set of variables. */
export function loadEnvFile(file: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw fileReadError(error, file);
  }
  return parseEnvFile(text, file);
}

/** Look a variable up: the process environment first, then `.env`. */
export function lookupVariable(
  name: string,
  env: NodeJS.ProcessEnv,
  dotenv: Readonly<Record<string, string>>,
): string | undefined {
  const fromEnv = Object.hasOwn(env, name) ? env[name] : undefined;
  if (typeof fromEnv === "string") return fromEnv;
  return Object.hasOwn(dotenv, name) ? dotenv[name] : undefined;
}

function parseLine(line: string): { key: string; value: string } | string {
  const body = line.replace(/^export\s+/, "");
  const eq = body.indexOf("=");
  if (eq < 0) return "expected KEY=VALUE";
  const key = body.slice(0, eq).trim();
  if (!KEY_RE.test(key)) return "the key must be letters, digits and '_', not starting with a digit";
  const rest = body.slice(eq + 1).trimStart();
  if (rest.startsWith('"')) return parseQuoted(rest, '"', key);
  if (rest.startsWith("'")) return parseQuoted(rest, "'", key);
  const comment = rest.search(/\s#/);
  return { key, value: (comment < 0 ? rest : rest.slice(0, comment)).trimEnd() };
}

function parseQuoted(rest: string, quote: string, key: string): { key: string; value: string } | string {
  let value = "";
  let i = 1;
  for (; i < rest.length; i++) {
    const ch = rest[i] as string;
    if (ch === quote) break;
    if (quote === '"' && ch === "\\" && i + 1 < rest.length) {
      const next = rest[i + 1] as string;
      value += DOUBLE_QUOTE_ESCAPES[next] ?? `\\${next}`;
      i++;
      continue;
    }
    value += ch;
  }
  if (i >= rest.length) return `the value of ${key} has no closing ${quote} (values cannot span lines)`;
  const after = rest.slice(i + 1).trim();
  if (after !== "" && !after.startsWith("#")) return `unexpected text after the closing ${quote} of ${key}`;
  return { key, value };
}

function envLineError(file: string, line: number, problem: string): ConfigError {
  return new ConfigError(`env file error: ${file}:${line}: ${problem}`, {
    hint: `fix line ${line} of ${file}: each line is KEY=VALUE, a # comment, or blank`,
    data: { file, line },
  });
}
