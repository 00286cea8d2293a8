// The gateway's API key: its default (${TENAX_API_KEY}, from the environment, then the profile's
// .env, as interpolation reads it), the key the first start writes to .env when there is none,
// and the key every client of the profile (dashboard, `tenax status`, the drill) finds the same way.
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  writeSync,
} from "node:fs";
import { ConfigError, commandLine } from "../core/errors.js";
import { loadEnvFile, lookupVariable } from "../profile/env-file.js";
import { fileWriteError } from "../profile/fs-errors.js";
import type { ProfilePaths } from "../profile/paths.js";
import { apiKeyProblem } from "./gateway-schema.js";
import { configProblemsError } from "./problems.js";
import type { TenaxConfig } from "./schema.js";

/** The variable gateway.api_key defaults to. */
export const GATEWAY_KEY_VARIABLE = "TENAX_API_KEY";

/** Where the gateway's key came from, for the line the gateway prints (never the key itself). */
export type GatewayKeySource = "config" | "environment" | "env_file" | "none";

/**
 * Give `config` its default gateway key when config.yaml sets none: TENAX_API_KEY from `env`, else
 * from the profile's .env. A blank or unusable value is a config error naming where it was set.
 */
export function withDefaultGatewayKey(
  config: TenaxConfig,
  paths: ProfilePaths,
  env: NodeJS.ProcessEnv,
  dotenv: Readonly<Record<string, string>>,
): { config: TenaxConfig; source: GatewayKeySource } {
  if (config.gateway.auth === "none") return { config, source: "none" };
  if (config.gateway.api_key !== undefined) return { config, source: "config" };
  const value = lookupVariable(GATEWAY_KEY_VARIABLE, env, dotenv);
  if (value === undefined) return { config, source: "none" };
  const fromEnv = typeof env[GATEWAY_KEY_VARIABLE] === "string";
  const problem = apiKeyProblem(value);
  if (problem !== null) throw blankKeyError(problem, paths, fromEnv);
  return {
    config: { ...config, gateway: { ...config.gateway, api_key: value } },
    source: fromEnv ? "environment" : "env_file",
  };
}

function blankKeyError(problem: string, paths: ProfilePaths, fromEnv: boolean): ConfigError {
  const hint = `set ${GATEWAY_KEY_VARIABLE} to a real key, or remove it to have the gateway's first start write a new one to ${paths.env}`;
  if (fromEnv)
    return new ConfigError(
      `config error: ${GATEWAY_KEY_VARIABLE} in the environment (the default of gateway.api_key): ${problem}`,
      { hint, data: { variable: GATEWAY_KEY_VARIABLE } },
    );
  return configProblemsError(
    paths.env,
    [{ line: envLine(paths.env, GATEWAY_KEY_VARIABLE), path: GATEWAY_KEY_VARIABLE, message: problem }],
    hint,
  );
}

/** The line of `.env` that sets `name` (the last one, which wins); 1 when it cannot be found. */
function envLine(file: string, name: string): number {
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return 1;
  }
  const pattern = new RegExp(`^\\s*(?:export\\s+)?${name}\\s*=`);
  const lines = text.split(/\r?\n/);
  for (let i = lines.length - 1; i >= 0; i--) if (pattern.test(lines[i] ?? "")) return i + 1;
  return 1;
}

export interface EnsuredKey {
  config: TenaxConfig;
  /** Where the key is: "written" when this start made it (in the profile's .env). */
  source: GatewayKeySource | "written";
  /** Set when an existing .env that others could read was made 0600. */
  tightened: string | null;
}

/** A new key: `tnx-` and 32 random bytes, base64url. */
export function newGatewayKey(random: (size: number) => Buffer = randomBytes): string {
  return `tnx-${random(32).toString("base64url")}`;
}

/**
 * Make sure a gateway that needs a key has one: with none in config, the environment or .env,
 * write a new TENAX_API_KEY line to the profile's .env (created 0600, its other lines kept; one
 * that others can read is tightened to 0600). The profile folder is made (0700) when missing.
 * `loaded` is where the config loader found the key.
 */
export function ensureGatewayKey(
  paths: ProfilePaths,
  config: TenaxConfig,
  loaded: GatewayKeySource,
  env: NodeJS.ProcessEnv = process.env,
  random: (size: number) => Buffer = randomBytes,
): EnsuredKey {
  if (config.gateway.auth === "none") return { config, source: "none", tightened: null };
  if (config.gateway.api_key !== undefined) return { config, source: loaded, tightened: null };
  // Read again: another process of the profile may have written it since the config was loaded.
  const again = withDefaultGatewayKey(config, paths, env, loadEnvFile(paths.env));
  if (again.config.gateway.api_key !== undefined)
    return { config: again.config, source: again.source, tightened: null };
  const key = newGatewayKey(random);
  const tightened = appendKeyLine(paths, key);
  return {
    config: { ...config, gateway: { ...config.gateway, api_key: key } },
    source: "written",
    tightened,
  };
}

function appendKeyLine(paths: ProfilePaths, key: string): string | null {
  try {
    mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
    // Appended in place, so the file keeps its owner, links and other lines.
    const fd = openSync(paths.env, "a+", 0o600);
    try {
      const { size, mode } = fstatSync(fd);
      const before = size > 0 && !endsWithNewline(paths.env) ? "\n" : "";
      const note = `# The gateway's API key, written by its first start on ${new Date().toISOString()}; clients send it as Authorization: Bearer KEY\n`;
      writeSync(fd, `${before}${note}${GATEWAY_KEY_VARIABLE}=${key}\n`);
      fsyncSync(fd);
      if ((mode & 0o077) === 0) return null;
      chmodSync(paths.env, 0o600);
      return `${paths.env} could be read by other users (mode ${(mode & 0o777).toString(8)}) and now holds the gateway's key: made it 0600 (${commandLine(["chmod", "600", paths.env])})`;
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw fileWriteError(error, "write the gateway's API key", paths.env, paths.dir);
  }
}

function endsWithNewline(file: string): boolean {
  const text = readFileSync(file);
  return text.length === 0 || text[text.length - 1] === 0x0a;
}

/**
 * The key a client of the profile sends: gateway.api_key as loaded, else TENAX_API_KEY read again
 * from the environment and .env (a gateway started after the client may have just written it).
 */
export function currentGatewayKey(
  paths: ProfilePaths,
  config: TenaxConfig,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  if (config.gateway.auth === "none") return undefined;
  if (config.gateway.api_key !== undefined) return config.gateway.api_key;
  try {
    return withDefaultGatewayKey(config, paths, env, loadEnvFile(paths.env)).config.gateway.api_key;
  } catch {
    // A broken .env is reported by the commands that load the config; a probe just sends no key.
    return undefined;
  }
}
