// Which config keys hold secrets: one list, read by errors and `profile show` (which print `***`
// instead of them) and by the profile's Redactor (which replaces their values wherever text
// leaves the process). A new secret key is one line here.
import type { NamedSecret } from "../core/redact.js";
import type { TenaxConfig } from "./schema.js";
import { formatKeyPath, type KeyPath } from "./yaml-nodes.js";

export const REDACTED = "***";

/** Key paths whose values are secret; "*" matches any one key. A list there is a list of secrets. */
export const SECRET_PATHS: readonly (readonly string[])[] = [
  ["providers", "*", "api_keys"],
  ["gateway", "api_key"],
  ["platforms", "*", "token"],
  ["telemetry", "headers", "*"],
  ["store", "url"],
];

/** True for a secret key path or anything under one (a list of keys and each key in it). */
export function isSecretPath(path: readonly PropertyKey[]): boolean {
  return SECRET_PATHS.some(
    (pattern) =>
      path.length >= pattern.length && pattern.every((part, i) => part === "*" || part === String(path[i])),
  );
}

/** A copy of the config with every secret replaced by `***` (lists keep their length). */
export function redactConfig(config: TenaxConfig): TenaxConfig {
  const copy = structuredClone(config);
  visitSecrets(copy, (_path, _value, replace) => replace(REDACTED));
  return copy;
}

/** Every secret value in the config, named by its key path (`providers.main.api_keys[0]`). */
export function configSecrets(config: TenaxConfig): NamedSecret[] {
  const out: NamedSecret[] = [];
  visitSecrets(config, (path, value) => out.push({ name: formatKeyPath(path), value }));
  return out;
}

type Visit = (path: KeyPath, value: string, replace: (value: string) => void) => void;

function visitSecrets(root: unknown, visit: Visit): void {
  for (const pattern of SECRET_PATHS) walk(root, pattern, [], visit);
}

function walk(node: unknown, pattern: readonly string[], path: KeyPath, visit: Visit): void {
  if (!isRecord(node)) return;
  const [head, ...rest] = pattern;
  if (head === undefined) return;
  for (const key of head === "*" ? Object.keys(node) : [head]) {
    if (!Object.hasOwn(node, key)) continue;
    const value = node[key];
    const at = [...path, key];
    if (rest.length > 0) walk(value, rest, at, visit);
    else if (typeof value === "string")
      visit(at, value, (v) => {
        node[key] = v;
      });
    else if (Array.isArray(value))
      value.forEach((item, i) => {
        if (typeof item === "string")
          visit([...at, i], item, (v) => {
            value[i] = v;
          });
      });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
