// Lists the files a snapshot of a project would hold, counting files and bytes as it goes and
// stopping as soon as a limit is passed, so a huge tree costs a bounded walk, never a full copy.
import type { Dirent } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { type EntryType, type ExclusionKind, exclusionOf } from "./exclude.js";

export interface WalkLimits {
  maxFiles: number;
  maxBytes: number;
}

export interface ExcludedEntry {
  /** Relative to the project, with `/` separators. */
  path: string;
  kind: ExclusionKind | "tenax home" | "unreadable";
}

export type WalkResult =
  | { ok: true; files: string[]; bytes: number; excluded: ExcludedEntry[] }
  | { ok: false; why: string };

/** How many excluded entries a result names at most. */
export const EXCLUDED_KEPT = 50;

const STAT_BATCH = 256;

/**
 * Walk `root` (a real path) without following symlinks. Folders listed in `skip` (absolute real
 * paths, such as the checkpoint store itself) are never entered.
 */
export async function walkProject(
  root: string,
  limits: WalkLimits,
  skip: readonly string[] = [],
): Promise<WalkResult> {
  const files: string[] = [];
  const excluded: ExcludedEntry[] = [];
  const perTopLevel = new Map<string, number>();
  let bytes = 0;
  const queue: string[] = [""];

  const tooBig = (what: string): WalkResult => ({
    ok: false,
    why: `${root} is too big to snapshot: ${what}${biggest(perTopLevel)}`,
  });

  for (let next = 0; next < queue.length; next++) {
    const folder = queue[next] ?? "";
    const entries = await listFolder(join(root, folder), folder === "");
    if (entries === "unreadable") {
      if (excluded.length < EXCLUDED_KEPT) excluded.push({ path: folder, kind: "unreadable" });
      continue;
    }
    const kept: string[] = [];
    for (const entry of entries) {
      const type = entryType(entry);
      if (type === null) continue; // sockets, fifos, devices: nothing to restore
      const path = folder === "" ? entry.name : `${folder}/${entry.name}`;
      const kind = exclusionOf(entry.name, type);
      if (kind !== null) {
        if (excluded.length < EXCLUDED_KEPT) excluded.push({ path, kind });
        continue;
      }
      if (type === "folder") {
        if (skip.includes(join(root, path))) excluded.unshift({ path, kind: "tenax home" });
        else queue.push(path);
        continue;
      }
      kept.push(path);
    }
    for (let i = 0; i < kept.length; i += STAT_BATCH) {
      const batch = kept.slice(i, i + STAT_BATCH);
      const sizes = await Promise.all(batch.map((path) => sizeOf(join(root, path))));
      batch.forEach((path, j) => {
        const size = sizes[j];
        if (size === null || size === undefined) return; // gone since the listing
        files.push(path);
        bytes += size;
        const top = path.split("/", 1)[0] ?? path;
        perTopLevel.set(top, (perTopLevel.get(top) ?? 0) + 1);
      });
      if (files.length > limits.maxFiles) return tooBig(`more than ${limits.maxFiles} files`);
      if (bytes > limits.maxBytes) return tooBig(`more than ${formatBytes(limits.maxBytes)}`);
    }
  }
  return { ok: true, files, bytes, excluded };
}

function entryType(entry: Dirent): EntryType | null {
  if (entry.isDirectory()) return "folder";
  if (entry.isFile()) return "file";
  if (entry.isSymbolicLink()) return "symlink";
  return null;
}

async function listFolder(path: string, isRoot: boolean): Promise<Dirent[] | "unreadable"> {
  try {
    return await readdir(path, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (isRoot) throw error;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    if (code === "EACCES" || code === "EPERM") return "unreadable";
    throw error;
  }
}

async function sizeOf(path: string): Promise<number | null> {
  try {
    return (await lstat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

function biggest(perTopLevel: Map<string, number>): string {
  let top: [string, number] | null = null;
  for (const entry of perTopLevel) if (top === null || entry[1] > top[1]) top = entry;
  if (top === null) return "";
  return ` (${top[1]} of the files counted are under ${top[0]})`;
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
  if (bytes >= 1024 ** 2) return `${Math.round(bytes / 1024 ** 2)} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} bytes`;
}
