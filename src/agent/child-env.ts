// The environment of every process a tool starts: an allow list of this process's variables (what a
// shell needs, plus tools.exec.env), never one of Tenax's secrets (no variable named like one, none
// whose value is or holds one), plus the settings that keep commands from waiting on a pager or a
// prompt. Every spawn of a tool builds its environment here, and only here.
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
 * What a command inherits from this process, by name: what a shell and ordinary tools need to run,
 * and nothing that only this process uses (its keys, tokens, proxies with passwords, the variables
 * its config reads). `tools.exec.env` adds names. Kept whatever `.env` holds: a profile that sets
 * one of these there (or a value equal to one) for its own reasons must not leave commands without
 * a PATH or a home.
 */
export const INHERITED_ENV: readonly string[] = [
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TERM",
  "COLORTERM",
  "NO_COLOR",
  "TMPDIR",
  "TZ",
  "PWD",
  "EDITOR",
  "VISUAL",
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
];
const INHERITED = new Set(INHERITED_ENV);

/**
 * The environment for a tool's child process: of `base` (this process's environment), only the
 * inherited names (INHERITED_ENV and the locale's LC_*) and the operator's `allow` (tools.exec.env),
 * never one of Tenax's secrets by name or by value unless it is a base name; then QUIET_ENV, then
 * `extra` (what the caller sets on purpose, kept as given).
 */
export function childEnvironment(
  secrets: EnvSecrets,
  extra: Readonly<Record<string, string>> = {},
  base: NodeJS.ProcessEnv = process.env,
  allow: readonly string[] = [],
): Record<string, string> {
  const allowed = new Set(allow);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined) continue;
    const inherited = INHERITED.has(name) || name.startsWith("LC_");
    if (!inherited && !allowed.has(name)) continue;
    if (!inherited && (secrets.names.has(name) || secrets.redactor.holdsSecret(value))) continue;
    env[name] = value;
  }
  return { ...env, ...QUIET_ENV, ...extra };
}
