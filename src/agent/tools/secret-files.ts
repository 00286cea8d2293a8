// The files the file tools refuse even inside their roots and in `full` mode: what holds Tenax's
// keys and transcripts, SSH keys, the system's password hashes and what /proc shows of another
// process (its environment, memory, open files). Only a root that names the file itself (or the
// secret folder itself, for ~/.ssh) lets the tools reach one. The exec policy judges a command's
// words by the same rules (commandPlace).
import { opendirSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";
import type { CommandPlace } from "../exec-policy/index.js";

export interface SecretMatch {
  /** What the file is, for the refusal: "a Tenax profile's .env (it holds the provider keys)". */
  what: string;
  /** The paths a root may name to allow it: the file, and for a secret folder the folder too. */
  unlockedBy: string[];
}

/** The real folders of Tenax's home and of the agent's profile (see ProfilePaths). */
export interface ProfileFolders {
  home: string;
  dir: string;
}

const SYSTEM_SECRETS = new Set(["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-"]);
/** OpenSSH's names for private keys (id_rsa, id_ed25519_sk, id_rsa_work...); `.pub` is public. */
const SSH_KEY = /^id_(rsa|dsa|ecdsa|ed25519|xmss)([._-].*)?$/;
/**
 * What /proc shows of a process (any pid, `self`, a thread): its environment (Tenax's keys, when it
 * is Tenax or its parent), its memory, its open files (the store), its root and folder.
 */
const PROC_SECRET =
  /^\/proc\/[^/]+\/(task\/[^/]+\/)?(environ|mem|fd|fdinfo|map_files|root|cwd|auxv|pagemap|stack|syscall)(\/|$)/;

function profileFile(name: string): string | null {
  if (name === ".env") return "a Tenax profile's .env (it holds the provider and gateway keys)";
  if (name === "config.yaml") return "a Tenax profile's config.yaml";
  if (/^(state|search)\.db/.test(name)) return `a Tenax profile's store (${name})`;
  return null;
}

/** Whether `path` (absolute, normalized) is a secret file, whatever the roots say. */
export function secretFile(path: string, profile: ProfileFolders | null): SecretMatch | null {
  const name = basename(path);
  const folder = dirname(path);
  if (profile !== null) {
    const what = profileFile(name);
    const profileFolder =
      folder === profile.home || folder === profile.dir || dirname(folder) === join(profile.home, "profiles");
    if (what !== null && profileFolder) return { what, unlockedBy: [path] };
  }
  const parts = path.split(sep);
  const ssh = parts.indexOf(".ssh");
  if (ssh !== -1) {
    const sshFolder = parts.slice(0, ssh + 1).join(sep);
    return { what: `inside the SSH folder ${sshFolder}`, unlockedBy: [path, sshFolder] };
  }
  if (SYSTEM_SECRETS.has(path)) return { what: "the system's password hashes", unlockedBy: [path] };
  if (PROC_SECRET.test(path))
    return { what: "a process's environment, memory or open files (/proc/PID/...)", unlockedBy: [path] };
  if (name.toLowerCase().endsWith(".pem"))
    return { what: "a .pem file (keys and certificates)", unlockedBy: [path] };
  if (SSH_KEY.test(name) && !name.endsWith(".pub")) return { what: "an SSH private key", unlockedBy: [path] };
  return null;
}

function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** Folder entries read to expand a pattern: past this many, a pattern is as good as unknown. */
const MAX_LIST = 10_000;

/**
 * For the exec policy: where a command runs (`cwd`, with the environment `env` it gets) and what
 * it may not open unasked. A path is secret by the rules above, as written or where it really
 * leads (a link to `.env`); a folder holds secrets when Tenax's home, the profile, the SSH folder,
 * /etc (shadow) or /proc (environments) is in it.
 */
export function commandPlace(
  cwd: string,
  profile: ProfileFolders,
  env: Readonly<Record<string, string | undefined>>,
): CommandPlace {
  const given = { home: resolve(profile.home), dir: resolve(profile.dir) };
  const real = { home: realOr(given.home), dir: realOr(given.dir) };
  const home = env.HOME ?? homedir();
  const held: [string, string][] = [
    [given.home, "Tenax's home (every profile's keys and store)"],
    [real.home, "Tenax's home (every profile's keys and store)"],
    [given.dir, "the Tenax profile (its .env, config.yaml and store)"],
    [real.dir, "the Tenax profile (its .env, config.yaml and store)"],
    [join(home, ".ssh"), "the SSH folder"],
    ["/etc", "the system's password hashes (/etc/shadow)"],
    ["/proc", "every process's environment (/proc/PID/environ)"],
  ];
  const judge = (path: string) => (secretFile(path, given) ?? secretFile(path, real))?.what ?? null;
  return {
    cwd,
    env,
    secretPath(path) {
      const direct = judge(path);
      if (direct !== null || path.startsWith("/proc/")) return direct;
      const leads = realOr(path);
      return leads === path ? null : judge(leads);
    },
    holdsSecrets(path) {
      for (const folder of new Set([path, realOr(path)]))
        for (const [place, what] of held)
          if (place === folder || place.startsWith(folder === "/" ? "/" : `${folder}/`)) return what;
      return null;
    },
    list(dir) {
      try {
        const handle = opendirSync(dir);
        const names: string[] = [];
        try {
          for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
            names.push(entry.name);
            if (names.length > MAX_LIST) return null;
          }
        } finally {
          handle.closeSync();
        }
        return names;
      } catch {
        return [];
      }
    },
  };
}
