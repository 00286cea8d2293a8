// Where a profile's files live: TENAX_HOME is the default profile, TENAX_HOME/profiles/NAME the others.
import { homedir, userInfo } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { UsageError } from "../core/errors.js";

export const DEFAULT_PROFILE = "default";
/** The folders every profile has from the start (the store's spool, the logs, scheduled jobs). */
export const PROFILE_FOLDERS = ["spool", "logs", "cron"] as const;
const NAME_RE = /^[a-z0-9][a-z0-9_-]{0,39}$/;

export interface ProfilePaths {
  home: string;
  name: string;
  dir: string;
  config: string;
  env: string;
  state: string;
  search: string;
  spool: string;
  logs: string;
  cron: string;
  forensics: string;
  pid: string;
  cleanShutdown: string;
  /** Written by `tenax gateway restart` before it restarts the unit: the stopping gateway tells chats "restarting". */
  restartRequested: string;
  /** Shared by every profile: the shadow git checkpoint store. */
  checkpoints: string;
}

export function resolveHome(env: NodeJS.ProcessEnv = process.env): string {
  const value = env.TENAX_HOME;
  if (value !== undefined && value.trim() !== "") return resolve(value);
  // An empty HOME (a bare `env HOME=` or a service without one) makes homedir() "": the account's
  // own home then, never a .tenax in whatever folder the command happens to run in.
  const home = homedir();
  return join(isAbsolute(home) ? home : userInfo().homedir, ".tenax");
}

export function validateProfileName(name: string): string {
  if (!NAME_RE.test(name)) {
    throw new UsageError(
      `invalid profile name ${JSON.stringify(name)}: use 1-40 lowercase letters, digits, '-' or '_', starting with a letter or digit`,
    );
  }
  return name;
}

/** The profile chosen by --profile, else TENAX_PROFILE, else the default one. */
export function selectProfileName(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const name = flag ?? (env.TENAX_PROFILE?.trim() || undefined) ?? DEFAULT_PROFILE;
  return validateProfileName(name);
}

export function profilePaths(home: string, name: string): ProfilePaths {
  validateProfileName(name);
  const dir = name === DEFAULT_PROFILE ? home : join(home, "profiles", name);
  return {
    home,
    name,
    dir,
    config: join(dir, "config.yaml"),
    env: join(dir, ".env"),
    state: join(dir, "state.db"),
    search: join(dir, "search.db"),
    spool: join(dir, "spool"),
    logs: join(dir, "logs"),
    cron: join(dir, "cron"),
    forensics: join(dir, "forensics"),
    pid: join(dir, "gateway.pid"),
    cleanShutdown: join(dir, ".clean_shutdown"),
    restartRequested: join(dir, ".restart_requested"),
    checkpoints: join(home, "checkpoints", "store"),
  };
}
