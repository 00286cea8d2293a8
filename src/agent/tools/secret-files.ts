// The files the file tools refuse even inside their roots and in `full` mode: what holds Tenax's
// keys and transcripts, SSH keys and the system's password hashes. Only a root that names the file
// itself (or the secret folder itself, for ~/.ssh) lets the tools reach one.
import { homedir } from "node:os";
import { basename, dirname, join, resolve, sep } from "node:path";

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
  if (name.toLowerCase().endsWith(".pem"))
    return { what: "a .pem file (keys and certificates)", unlockedBy: [path] };
  if (SSH_KEY.test(name) && !name.endsWith(".pub")) return { what: "an SSH private key", unlockedBy: [path] };
  return null;
}

/**
 * For the exec policy: what a command's word names when it is a secret file (`~/.ssh/id_rsa`,
 * `/etc/shadow`, the profile's `.env` by any path), resolved against the command's folder; null
 * for any other word. A pattern (`~/.tenax/.e*`) is not expanded: it is only what it says.
 */
export function secretWord(cwd: string, profile: ProfileFolders): (word: string) => string | null {
  const folders = { home: resolve(profile.home), dir: resolve(profile.dir) };
  return (word) => {
    if (word === "" || word.startsWith("-") || word.includes("$")) return null;
    const path =
      word === "~" ? homedir() : word.startsWith("~/") ? join(homedir(), word.slice(2)) : resolve(cwd, word);
    return secretFile(path, folders)?.what ?? null;
  };
}
