// What a checkpoint never holds: secrets, dependency and build folders, caches, and version
// control metadata. Excluded paths are left alone by snapshots and restores alike.

export type ExclusionKind = "secret" | "dependencies" | "build output" | "cache" | "version control";

// Matched by name at any depth. Only folders: a file called `build` is often a script.
const FOLDERS: ReadonlyMap<string, ExclusionKind> = new Map<string, ExclusionKind>([
  ["node_modules", "dependencies"],
  ["bower_components", "dependencies"],
  ["jspm_packages", "dependencies"],
  ["vendor", "dependencies"],
  [".venv", "dependencies"],
  ["venv", "dependencies"],
  [".terraform", "dependencies"],
  ["dist", "build output"],
  ["build", "build output"],
  ["target", "build output"],
  [".next", "build output"],
  [".nuxt", "build output"],
  [".svelte-kit", "build output"],
  ["__pycache__", "cache"],
  [".cache", "cache"],
  [".turbo", "cache"],
  [".parcel-cache", "cache"],
  [".pytest_cache", "cache"],
  [".mypy_cache", "cache"],
  [".ruff_cache", "cache"],
  [".tox", "cache"],
  [".gradle", "cache"],
]);

// Any kind of entry with these names: the project's own repository (a folder, or a file in a
// worktree or submodule) and other tools' metadata.
const VCS = new Set([".git", ".hg", ".svn", ".bzr", ".jj"]);

const SECRET_NAMES = new Set([".env", ".netrc", ".pgpass", ".npmrc", ".pypirc"]);
const SECRET_PREFIXES = [".env.", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"];
const SECRET_SUFFIXES = [".pem", ".key", ".p12", ".pfx"];

export type EntryType = "folder" | "file" | "symlink";

/** Why an entry named `name` is left out of snapshots, or null when it is kept. */
export function exclusionOf(name: string, type: EntryType): ExclusionKind | null {
  if (VCS.has(name)) return "version control";
  if (isSecretName(name)) return "secret";
  // A symlink named like an excluded folder stands for one (node_modules -> ../shared/...).
  if (type === "file") return null;
  return FOLDERS.get(name) ?? null;
}

function isSecretName(name: string): boolean {
  if (SECRET_NAMES.has(name)) return true;
  const lower = name.toLowerCase();
  return (
    SECRET_PREFIXES.some((prefix) => lower.startsWith(prefix)) ||
    SECRET_SUFFIXES.some((suffix) => lower.endsWith(suffix))
  );
}
