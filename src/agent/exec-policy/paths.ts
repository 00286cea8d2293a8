// Which paths a command must not sweep: the root, system folders, home folders, the working
// folder's parents, and targets known only when the command runs.
import { posix } from "node:path";

const SYSTEM = new Set(
  ["/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media", "/mnt", "/opt"]
    .concat(["/proc", "/root", "/run", "/sbin", "/snap", "/srv", "/sys", "/usr", "/var", "/tmp"])
    .concat(["/Applications", "/Library", "/System", "/Users", "/private", "/Volumes"]),
);

/** Characters from which a word's value is known only when it runs or expands. */
const WILD = /[*?[{$`]/;

/** `$HOME` and `${HOME}` are the home folder, `~`; then `.`, `..` and repeated slashes are folded. */
export function normalisePath(value: string): string {
  const home = value.replace(/^\$\{?HOME\}?(?=\/|$)/, "~");
  const tilde = /^~(?=\/|$)/.test(home);
  // The home folder is folded as a folder of the root, so `~/..` climbs to the root.
  const folded = posix.normalize(tilde ? `/~home${home.slice(1)}` : home);
  const trimmed = folded.length > 1 ? folded.replace(/\/+$/, "") : folded;
  if (!tilde) return trimmed;
  return trimmed === "/~home" ? "~" : trimmed.startsWith("/~home/") ? `~${trimmed.slice(6)}` : trimmed;
}

/** The root, a system folder or one level into /usr or /var, or a home folder itself. */
export function isSystemPath(path: string): boolean {
  return (
    path === "/" ||
    path === "~" ||
    SYSTEM.has(path) ||
    /^\/(usr|var)\/[^/]+$/.test(path) ||
    /^\/(home|Users)\/[^/]+$/.test(path) ||
    /^~[^/]+$/.test(path)
  );
}

function isParentOrHere(path: string): boolean {
  return path === "." || /^\.\.(\/\.\.)*$/.test(path);
}

/**
 * Whether a path names a broad tree: a system path, the working folder or a parent of it, every
 * entry of one of those (`/*`, `*`, `~/.*`), or a target that starts with an expansion other than
 * the home folder (`$DIR`, `$(...)`). With `relative` false, the working folder and its parents
 * count as narrow (chmod -R . is routine).
 */
export function isBroadPath(value: string, relative = true): boolean {
  const home = value.replace(/^\$\{?HOME\}?(?=\/|$)/, "~");
  const wild = home.search(WILD);
  if (wild < 0) {
    const path = normalisePath(home);
    return isSystemPath(path) || (relative && isParentOrHere(path));
  }
  if (wild === 0 && /^[$`]/.test(home)) return true;
  const slash = home.lastIndexOf("/", wild);
  const dir = slash < 0 ? "." : normalisePath(home.slice(0, slash + 1) || "/");
  const segment = home.slice(slash + 1).split("/")[0] ?? "";
  if (isSystemPath(dir)) return true;
  return relative && isParentOrHere(dir) && /^(\*|\.\*|[{$`])/.test(segment) && !/^\*\.\w/.test(segment);
}

/** Whether a path is /etc or under it. */
export function isUnderEtc(value: string): boolean {
  const path = normalisePath(value);
  return /^(\/private)?\/etc(\/|$)/.test(path);
}

/** Devices a command may write to without harm. */
export function isHarmlessDevice(value: string): boolean {
  const path = normalisePath(value);
  return /^\/dev\/(null|zero|full|random|urandom|stdout|stderr|stdin|tty|fd\/\d+|pts\/\d+|shm(\/.*)?)$/.test(
    path,
  );
}
