// Which config keys hold secrets, so errors, `profile show` and logs print `***` instead of them.
import type { TenaxConfig } from "./schema.js";

export const REDACTED = "***";

/** Key paths whose values are secret; "*" matches any one key or list index. */
export const SECRET_PATHS: readonly (readonly string[])[] = [
  ["providers", "*", "api_keys"],
  ["gateway", "api_key"],
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
  const providers = Object.fromEntries(
    Object.entries(config.providers).map(([name, p]) => [
      name,
      p.api_keys === undefined ? p : { ...p, api_keys: p.api_keys.map(() => REDACTED) },
    ]),
  );
  const gateway = { ...config.gateway };
  if (gateway.api_key !== undefined) gateway.api_key = REDACTED;
  return structuredClone({ ...config, providers, gateway });
}

/** Every secret value in the config, for scrubbing free text such as provider error bodies. */
export function secretValues(config: TenaxConfig): string[] {
  const values = Object.values(config.providers).flatMap((p) => p.api_keys ?? []);
  if (config.gateway.api_key !== undefined) values.push(config.gateway.api_key);
  return values.filter((v) => v.length > 0);
}

/** Replace each occurrence of a secret in the text by `***`. */
export function redactText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length))
    out = out.replaceAll(secret, REDACTED);
  return out;
}
