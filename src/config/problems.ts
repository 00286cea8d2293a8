// Config problems as values (line, key path, message), built from YAML and schema errors and joined
// into one ConfigError that lists every problem, so a user fixes them all in one pass.
import type { Document, LineCounter } from "yaml";
import type { z } from "zod";
import { ConfigError } from "../core/errors.js";
import { allowedKeysAt } from "./schema.js";
import { isSecretPath, REDACTED } from "./secrets.js";
import { formatKeyPath, type KeyPath, locate } from "./yaml-nodes.js";

export interface ConfigProblem {
  /** 0 for a problem of a file that does not exist (a default that fails). */
  line: number;
  column?: number;
  /** The key path as people read it (`providers.main.max_concurrency`); empty for the whole file. */
  path: string;
  message: string;
}

export function formatProblem(file: string, problem: ConfigProblem): string {
  const where = problem.column === undefined ? `${problem.line}` : `${problem.line}:${problem.column}`;
  const key = problem.path === "" ? "" : `${problem.path}: `;
  if (problem.line === 0) return `config error: ${file}: ${key}${problem.message}`;
  return `config error: ${file}:${where}: ${key}${problem.message}`;
}

/** One error for all problems, each on its own line, in file order. */
export function configProblemsError(file: string, problems: ConfigProblem[], hint: string): ConfigError {
  const sorted = [...problems].sort((a, b) => a.line - b.line || (a.column ?? 0) - (b.column ?? 0));
  return new ConfigError(sorted.map((p) => formatProblem(file, p)).join("\n"), {
    hint,
    data: { file, problems: sorted },
  });
}

/** Turn schema issues into problems located in the document; `raw` is the data that was checked. */
export function schemaProblems(
  issues: readonly z.core.$ZodIssue[],
  raw: unknown,
  doc: Document,
  lines: LineCounter,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        const { line } = locate(doc, lines, path, "key");
        problems.push({ line, path: formatKeyPath(path), message: unknownKeyMessage(issue.path, key) });
      }
      continue;
    }
    const { line } = locate(doc, lines, issue.path, "value");
    problems.push({ line, path: formatKeyPath(issue.path), message: issueMessage(issue, raw) });
  }
  return problems;
}

function issueMessage(issue: z.core.$ZodIssue, raw: unknown): string {
  if (issue.code === "custom") return issue.message;
  const value = valueAt(raw, issue.path);
  if (value === undefined) return `missing; ${issue.message}`;
  const shown = isSecretPath(issue.path) ? REDACTED : describeValue(value);
  return `${issue.message}, got ${shown}`;
}

function unknownKeyMessage(parent: KeyPath, key: string): string {
  const allowed = allowedKeysAt(parent);
  if (!allowed) return "unknown key";
  const close = allowed.filter((k) => editDistance(k, key) <= Math.max(1, Math.floor(k.length / 4)));
  if (close.length > 0) return `unknown key (did you mean ${close.map((k) => `"${k}"`).join(" or ")}?)`;
  return `unknown key (allowed here: ${allowed.join(", ")})`;
}

/** A value as it appears in an error: strings quoted and cut short, collections named. */
export function describeValue(value: unknown): string {
  if (value === null) return "an empty value";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  if (typeof value === "string") {
    const cut = value.length > 60 ? `${value.slice(0, 57)}...` : value;
    return JSON.stringify(cut);
  }
  return String(value);
}

function valueAt(raw: unknown, path: KeyPath): unknown {
  let current = raw;
  for (const part of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}

/** Edit distance counting a swap of two neighbouring letters as one edit (typos like "gatewya"). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => d[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    const row = d[i] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.length, b.length);
}
