// The environment of every process a tool starts: this process's own, without Tenax's secrets (no
// variable named like one, none whose value is or holds one), plus the settings that keep commands from
// waiting on a pager or a prompt. Every spawn of a tool builds its environment here, and only here.
import type { Redactor } from "../core/redact.js";

/** What a child must not inherit: ProfileSecrets fits it. */
export interface EnvSecrets {
  names: ReadonlySet<string>;
  redactor: Pick<Redactor, "holdsSecret">;
}

/** Commands never wait on a pager or a password prompt: nobody is there to answer. */
export const QUIET_ENV: Readonly<Record<string, string>> = {
  PAGER: "cat",
  GIT_PAGER: "cat",
  GIT_TERMINAL_PROMPT: "0",
};

/**
 * Kept whatever `.env` holds: a profile that sets one of these there (or a value equal to one) for
 * its own reasons must not leave commands without a PATH or a home.
 */
const ALWAYS_KEPT = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "TERM",
  "TMPDIR",
  "TZ",
  "PWD",
]);

/**
 * The environment for a tool's child process: `base` (this process's environment) scrubbed of the
 * secrets, then QUIET_ENV, then `extra` (what the caller sets on purpose, kept as given).
 */
export function childEnvironment(
  secrets: EnvSecrets,
  extra: Readonly<Record<string, string>> = {},
  base: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    const kept = ALWAYS_KEPT.has(name) || name.startsWith("LC_");
    if (!kept && (secrets.names.has(name) || secrets.redactor.holdsSecret(value))) continue;
    env[name] = value;
  }
  return { ...env, ...QUIET_ENV, ...extra };
}
