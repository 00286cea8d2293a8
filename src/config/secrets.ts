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
  ["mcp", "servers", "*", "headers", "*"],
  ["dashboard", "auth", "oidc", "client_secret"],
];

/**
 * Key paths whose values are not secret as written, but where every `${VAR}` they read is: an MCP
 * server's `env: { GITHUB_TOKEN: "${GITHUB_TOKEN}" }` is redacted wherever the token shows, while
 * `env: { ROOT: /srv/data }` stays readable.
 */
export const SECRET_VARIABLE_PATHS: readonly (readonly string[])[] = [
  ["mcp", "servers", "*", "env", "*"],
  ["mcp", "servers", "*", "args", "*"],
];

/** True when every variable a value at this path reads is a secret (a secret path, or one of SECRET_VARIABLE_PATHS). */
export function readsSecretVariables(path: readonly PropertyKey[]): boolean {
  return (
    isSecretPath(path) ||
    SECRET_VARIABLE_PATHS.some(
      (pattern) =>
        path.length === pattern.length &&
        pattern.every((part, i) => part === "*" || part === String(path[i])),
    )
  );
}

/** Key paths holding a URL whose password alone is the secret (the rest names a host, to be shown). */
const URL_PATHS: readonly (readonly string[])[] = [["store", "url"]];

/**
 * What is secret in a value at a secret path, and how the value is shown: the whole value, or for
 * a database URL its password alone (`postgresql://tenax:***@db/tenax`); null when there is none
 * (a URL without a password).
 */
export function secretIn(
  path: readonly PropertyKey[],
  value: string,
): { secret: string; shown: string } | null {
  const isUrl = URL_PATHS.some(
    (p) => p.length === path.length && p.every((part, i) => part === String(path[i])),
  );
  if (!isUrl) return { secret: value, shown: REDACTED };
  try {
    const url = new URL(value);
    if (url.password === "") return null;
    const secret = decodeURIComponent(url.password);
    url.password = REDACTED;
    return { secret, shown: url.toString() };
  } catch {
    return { secret: value, shown: REDACTED };
  }
}

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
  visitSecrets(copy, (path, value, replace) => {
    const found = secretIn(path, value);
    if (found !== null) replace(found.shown);
  });
  return copy;
}

/** Every secret value in the config, named by its key path (`providers.main.api_keys[0]`). */
export function configSecrets(config: TenaxConfig): NamedSecret[] {
  const out: NamedSecret[] = [];
  visitSecrets(config, (path, value) => {
    const found = secretIn(path, value);
    if (found !== null) out.push({ name: formatKeyPath(path), value: found.secret });
  });
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
