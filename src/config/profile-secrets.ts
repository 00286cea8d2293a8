// Everything of a profile that is secret, gathered once per process: the values of the config's
// secret keys, every value of the profile's `.env`, and the environment's values of those names
// (the gateway key's TENAX_API_KEY, the variables a secret key reads, every `.env` name). From it
// come the Redactor and the names a tool's child process never gets.
import { type NamedSecret, Redactor } from "../core/redact.js";
import { loadEnvFile } from "../profile/env-file.js";
import type { ProfilePaths } from "../profile/paths.js";
import { GATEWAY_KEY_VARIABLE } from "./gateway-key.js";
import type { LoadedConfig } from "./load.js";
import type { TenaxConfig } from "./schema.js";
import { configSecrets } from "./secrets.js";

export interface ProfileSecrets {
  redactor: Redactor;
  /** Variable names that hold Tenax's secrets: tools' child processes never get them. */
  names: ReadonlySet<string>;
}

export interface SecretSources {
  config: TenaxConfig;
  /** The profile's `.env`, parsed. */
  dotenv: Readonly<Record<string, string>>;
  env: NodeJS.ProcessEnv;
  /** The variables `${VAR}` in secret keys read (LoadedConfig.secretVariables). */
  variables?: readonly string[];
}

export function profileSecrets(sources: SecretSources): ProfileSecrets {
  const names = new Set([GATEWAY_KEY_VARIABLE, ...(sources.variables ?? []), ...Object.keys(sources.dotenv)]);
  // Config key paths first: a value known both ways is named after the key that uses it.
  const secrets: NamedSecret[] = configSecrets(sources.config);
  for (const name of names) {
    const fromFile = Object.hasOwn(sources.dotenv, name) ? sources.dotenv[name] : undefined;
    const fromEnv = Object.hasOwn(sources.env, name) ? sources.env[name] : undefined;
    for (const value of [fromFile, fromEnv]) if (typeof value === "string") secrets.push({ name, value });
  }
  return { redactor: new Redactor(secrets), names };
}

/** The secrets of a loaded profile, reading its `.env` (again) and the process environment. */
export function loadProfileSecrets(
  paths: ProfilePaths,
  loaded: Pick<LoadedConfig, "config"> & Partial<Pick<LoadedConfig, "secretVariables">>,
  env: NodeJS.ProcessEnv = process.env,
): ProfileSecrets {
  return profileSecrets({
    config: loaded.config,
    dotenv: loadEnvFile(paths.env),
    env,
    variables: loaded.secretVariables ?? [],
  });
}
