// Where the host and port a server listens on were given (a flag, or a key of config.yaml), so that
// an address it cannot open is told as that setting: a config error at the key's file and line, a
// usage error naming the flag, or, for what may pass (a port in use), the error with where the
// value came from.
import type { LoadedConfig } from "../config/load.js";
import { TenaxError, UsageError } from "../core/errors.js";
import { BindError, type BindSetting, checkHost } from "../http/bind-error.js";

export interface ListenSettings {
  /** The config section that holds host and port: gateway, dashboard. */
  section: "gateway" | "dashboard";
  /** The profile's config.yaml, and what was loaded from it (null: it does not load, defaults hold). */
  file: string;
  loaded: LoadedConfig | null;
  /** `--host` and `--port` as given (undefined: the config's value is used). */
  flags: { host?: string | undefined; port?: string | undefined };
}

const FLAGS: Record<BindSetting, string> = { host: "--host", port: "--port" };

/** The error a BindError becomes once its setting's origin is known; other errors as they are. */
export function explainBindError(error: unknown, settings: ListenSettings): unknown {
  if (!BindError.isBindError(error)) return error;
  const flag = FLAGS[error.setting];
  const fromFlag = settings.flags[error.setting] !== undefined;
  const key = [settings.section, error.setting];
  const options = { cause: error, ...(error.hint === undefined ? {} : { hint: error.hint }) };
  if (error.lasting) {
    if (fromFlag) return new UsageError(`${flag}: ${error.message}`, options);
    const hint = `${error.hint ?? "change it"} (or pass ${flag})`;
    if (settings.loaded !== null) return settings.loaded.problemAt(key, error.message, hint);
    return new TenaxError(error.code, `${error.message} (${origin(key, settings)})`, { ...options, hint });
  }
  const where = fromFlag ? `given as ${flag}` : origin(key, settings);
  return new TenaxError(error.code, `${error.message} (${where})`, { ...options, data: error.data });
}

/** `gateway.port at /home/me/.tenax/config.yaml:4`, or that it is the default. */
function origin(key: string[], settings: ListenSettings): string {
  if (settings.loaded === null) return `${key.join(".")}: its default, as ${settings.file} does not load`;
  const line = settings.loaded.lineOf(key);
  return line === null
    ? `${key.join(".")}: its default, not set in ${settings.file}`
    : `${key.join(".")} at ${settings.file}:${line}`;
}

/**
 * Check the host before anything starts: a host that can never be listened on is the setting's
 * error (explainBindError) before a store is opened or a turn resumed.
 */
export async function checkListenHost(host: string, name: string, settings: ListenSettings): Promise<void> {
  try {
    await checkHost(host, { name });
  } catch (error) {
    throw explainBindError(error, settings);
  }
}
