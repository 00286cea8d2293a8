// Where the checkpoint store keeps things, and how a project folder is named inside it.
//
// TENAX_HOME/checkpoints/store/          shared by every profile and project
//   repo/                                one bare git repository: one object database for all
//     refs/tenax/<project>/<seq>           one ref per snapshot, a parentless commit
//   projects/<project>/index             the project's own index (GIT_INDEX_FILE)
//   projects/<project>/path              the project's real path, for people reading the store
//   projects/<project>/lock              held while a snapshot or restore runs
//   home/                                HOME of every git process: empty, so no user config
//
// <project> is a hash of the project's real absolute path, so two spellings of one folder (a
// symlink, a trailing slash) are one project.
import { createHash } from "node:crypto";
import { realpath, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "../core/errors.js";

export interface StoreLayout {
  root: string;
  repo: string;
  projects: string;
  home: string;
}

export interface ProjectLayout {
  /** The project's real absolute path. */
  path: string;
  id: string;
  dir: string;
  index: string;
  lock: string;
  pathFile: string;
  /** The ref namespace of its snapshots, with a trailing slash. */
  refPrefix: string;
}

export function storeLayout(tenaxHome: string): StoreLayout {
  const root = join(resolve(tenaxHome), "checkpoints", "store");
  return { root, repo: join(root, "repo"), projects: join(root, "projects"), home: join(root, "home") };
}

export function projectId(realPath: string): string {
  return createHash("sha256").update(realPath).digest("hex").slice(0, 20);
}

export function projectLayout(store: StoreLayout, realPath: string): ProjectLayout {
  const id = projectId(realPath);
  const dir = join(store.projects, id);
  return {
    path: realPath,
    id,
    dir,
    index: join(dir, "index"),
    lock: join(dir, "lock"),
    pathFile: join(dir, "path"),
    refPrefix: `refs/tenax/${id}/`,
  };
}

/**
 * The real path of a project folder. A folder that no longer exists (deleted by mistake, to be
 * restored) gets the real path of its nearest existing parent plus the missing names.
 */
export async function canonicalPath(dir: string): Promise<{ path: string; exists: boolean }> {
  const absolute = resolve(dir);
  let path: string;
  try {
    path = await realpath(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR") throw notAFolder(absolute);
    const parent = dirname(absolute);
    if (code !== "ENOENT" || parent === absolute) throw error;
    const base = await canonicalPath(parent);
    return { path: join(base.path, basename(absolute)), exists: false };
  }
  if (!(await stat(path)).isDirectory()) throw notAFolder(absolute);
  return { path, exists: true };
}

function notAFolder(path: string): UsageError {
  return new UsageError(`${path} is not a folder`, { hint: "pass the project's folder with --project DIR" });
}

/** True when `path` is `folder` or inside it. */
export function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith("/") ? folder : `${folder}/`);
}
