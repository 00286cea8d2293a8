// A disk that really fills: a tiny tmpfs of its own per test (needs root for mount; CI runs as
// root), files to fill it and free it again, and ballast that lets state.db go on committing
// into space it already holds while the disk is full.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type { Store } from "../../src/store/store.js";
import { until as untilHolds } from "./until.js";

/** Mount a tmpfs of `size` (e.g. "16m"); returns its mount point and the unmount to run after the test. */
export function tinyDisk(size = "16m"): { dir: string; unmount: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "tenax-tmpfs-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
  return {
    dir,
    unmount: () => {
      execFileSync("umount", [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fill what is left of the disk; returns the filler files to delete to free it again. */
export function fillDisk(dir: string): string[] {
  const files: string[] = [];
  for (let size = 256 * 1024; size >= 4096; size = Math.floor(size / 2)) {
    for (;;) {
      const file = join(dir, `filler-${files.length}`);
      try {
        writeFileSync(file, Buffer.alloc(size));
        files.push(file);
      } catch {
        rmSync(file, { force: true });
        break;
      }
    }
  }
  return files;
}

export function freeDisk(fillers: readonly string[]): void {
  for (const f of fillers) rmSync(f, { force: true });
}

/**
 * Grow state.db's WAL and free list with a ballast session, then delete it: on a full disk the
 * store can go on committing into space it already holds, while the index, which holds none
 * spare, cannot grow.
 */
export async function ballast(store: Store, state: string): Promise<void> {
  const id = await store.createSession({ title: "ballast" });
  for (let i = 0; i < 8; i++)
    await store.appendMessage({ session_id: id, role: "user", content: "b".repeat(100_000) });
  passiveCheckpoint(state);
  await store.deleteSession(id);
  passiveCheckpoint(state);
}

/** Copy the WAL into the main file, keeping the WAL file's size (its space is reused). */
export function passiveCheckpoint(path: string): void {
  const db = new Database(path);
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } finally {
    db.close();
  }
}

export async function until(what: () => boolean | Promise<boolean>, ms = 20_000, step = 50): Promise<void> {
  await untilHolds(what, ms, "the awaited condition", step);
}
