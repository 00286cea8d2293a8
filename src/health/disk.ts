// The disk under a profile: free space where its files live, and how much its store and logs
// take. Read with asynchronous calls (the thread pool), so a slow disk never blocks the gateway.
import { readdir, stat, statfs } from "node:fs/promises";
import { join } from "node:path";
import type { ProfilePaths } from "../profile/paths.js";
import type { Component, Level } from "./status.js";

export interface DiskReading {
  dir: string;
  free_bytes: number;
  total_bytes: number;
  store_bytes: number;
  log_bytes: number;
}

/** Below these, new writes may fail soon (degraded) or any moment (down). */
export const DISK_DEGRADED_BYTES = 256 * 1024 * 1024;
export const DISK_DOWN_BYTES = 50 * 1024 * 1024;

export async function readDisk(paths: ProfilePaths): Promise<DiskReading> {
  const fs = await statfs(paths.dir);
  const sizes = await Promise.all(
    [paths.state, `${paths.state}-wal`, `${paths.state}-shm`].map((f) => sizeOf(f)),
  );
  return {
    dir: paths.dir,
    free_bytes: fs.bavail * fs.bsize,
    total_bytes: fs.blocks * fs.bsize,
    store_bytes: sizes.reduce((a, b) => a + b, 0),
    log_bytes: await folderSize(paths.logs),
  };
}

export function diskComponent(d: DiskReading): Component & Record<string, unknown> {
  const status: Level =
    d.free_bytes < DISK_DOWN_BYTES ? "down" : d.free_bytes < DISK_DEGRADED_BYTES ? "degraded" : "ok";
  return {
    status,
    detail: `${mib(d.free_bytes)} free of ${mib(d.total_bytes)} under ${d.dir}; store ${mib(d.store_bytes)}, logs ${mib(d.log_bytes)}`,
    next:
      status === "ok"
        ? null
        : `free space under ${d.dir}: \`tenax sessions prune\` drops old sessions, and old logs in logs/ can go`,
    free_bytes: d.free_bytes,
    total_bytes: d.total_bytes,
    store_bytes: d.store_bytes,
    log_bytes: d.log_bytes,
  };
}

function mib(bytes: number): string {
  return bytes >= 1024 ** 3
    ? `${(bytes / 1024 ** 3).toFixed(1)} GiB`
    : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}

async function folderSize(dir: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  const sizes = await Promise.all(names.map((n) => sizeOf(join(dir, n))));
  return sizes.reduce((a, b) => a + b, 0);
}
