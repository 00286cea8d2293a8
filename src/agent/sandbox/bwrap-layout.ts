// What a sandboxed command sees of the machine, decided once when the agent starts: the system's
// folders read-only, a few more read-only places programs need (node's install, the PATH's
// folders, git's settings, the resolver's file), an empty private /tmp and home, the working
// roots read-write, and Tenax's home, the profile and the credential stores hidden wherever a
// root would show them. bwrap-args.ts turns it into bwrap's arguments for one command.
import { lstatSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";

export interface SandboxLayout {
  /** System folders, read-only, or the links they are (`/bin -> usr/bin` on a merged /usr). */
  system: Array<{ path: string; link?: string }>;
  /** More read-only places: node's install, PATH folders outside the home, ~/.gitconfig, ... */
  readOnly: string[];
  /** Empty, private and writable for each command: /tmp, /var/tmp, the home folder. */
  scratch: string[];
  /** Read-write besides the command's working folder: tools.files.roots. */
  roots: string[];
  /** Hidden wherever a mount would show them: a folder under an empty tmpfs, a file as /dev/null. */
  masks: Array<{ path: string; folder: boolean }>;
  /** The home folder (HOME): a scratch folder unless a root holds it. */
  home: string;
}

const SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys"];

/** Credential stores in a home folder: hidden when a root shows the home (cwd = ~). */
const HOME_SECRETS = [".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".netrc", ".git-credentials"]
  .concat([
    ".npmrc",
    ".pypirc",
    ".config/gcloud",
    ".config/gh",
    ".cargo/credentials.toml",
    ".cargo/credentials",
  ])
  .concat([".password-store", ".local/share/keyrings"]);

/** The system's own secrets in /etc, which is otherwise shown read-only. */
const ETC_SECRETS = ["/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssl/private"]
  .concat(["/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key"])
  .concat(["/etc/ssh/ssh_host_dsa_key", "/etc/sudoers", "/etc/sudoers.d"]);

export interface LayoutInput {
  /** Tenax's home and the profile's folder: never shown. */
  profile: { home: string; dir: string };
  /** tools.files.roots (`~/` expanded here). */
  roots: readonly string[];
  /** The environment commands get (HOME, PATH). */
  env: Readonly<Record<string, string | undefined>>;
  /** This node's executable: its install is shown read-only so `node` and `npm` run. */
  execPath?: string;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

export function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Whether `path` is `folder` or under it. */
export function within(path: string, folder: string): boolean {
  return folder === "/" || path === folder || path.startsWith(`${folder}/`);
}

/** The layout for an agent's commands, from the machine as it is now. */
export function sandboxLayout(input: LayoutInput): SandboxLayout {
  const home = resolve(input.env.HOME ?? homedir());
  const system: SandboxLayout["system"] = [];
  for (const path of SYSTEM) {
    if (!exists(path)) continue;
    const stat = lstatSync(path);
    if (stat.isSymbolicLink()) system.push({ path, link: readlinkSync(path) });
    else if (stat.isDirectory()) system.push({ path });
  }
  const hidden = [input.profile.home, input.profile.dir].flatMap((p) => [resolve(p), real(p)]);
  const shown = (path: string) => !hidden.some((h) => within(path, h) || within(h, path));
  const readOnly = new Set<string>();
  // node's install (…/bin/node → …): `node`, `npm` and `npx` run as they do outside.
  if (input.execPath !== undefined) readOnly.add(dirname(dirname(real(input.execPath))));
  for (const dir of (input.env.PATH ?? "").split(":"))
    if (isAbsolute(dir) && !within(real(dir), home) && shown(real(dir))) readOnly.add(real(dir));
  readOnly.add(join(home, ".gitconfig"));
  readOnly.add(join(home, ".config", "git", "config"));
  // A resolver file linked out of /etc (systemd-resolved's stub in /run) is needed for DNS.
  const resolver = real("/etc/resolv.conf");
  if (!within(resolver, "/etc")) readOnly.add(resolver);
  for (const path of [...readOnly])
    if (!shown(path) || system.some((s) => within(path, s.path))) readOnly.delete(path);
  // Real paths: a root that is a link into a hidden place must be judged (and hidden) as that place.
  const roots = input.roots.map((r) =>
    real(r === "~" ? home : r.startsWith("~/") ? join(home, r.slice(2)) : r),
  );
  const masks: SandboxLayout["masks"] = [];
  for (const path of new Set([...hidden, ...HOME_SECRETS.map((p) => join(home, p)), ...ETC_SECRETS]))
    if (exists(path)) masks.push({ path, folder: isFolder(path) });
  // An empty home of its own, unless the home is a system folder (or the root: HOME=/).
  const scratch = ["/tmp", "/var/tmp"];
  if (home !== "/" && !system.some((s) => within(home, s.path))) scratch.push(home);
  return { system, readOnly: [...readOnly], scratch, roots, masks, home };
}
