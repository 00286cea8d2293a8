// The machine a run was made on, recorded next to its figures: CPUs, memory, Node and SQLite
// versions, the disk the stores live on, how long an fsync takes there, and the load around the run.
import { execFileSync } from "node:child_process";
import { closeSync, fsyncSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { median } from "./stats.js";

export interface Machine {
  nproc: number;
  cpu: string;
  memory_gib: number;
  node: string;
  sqlite: string;
  better_sqlite3: string;
  disk: string;
  fsync_4k_ms: number;
  load_before: number[];
}

/** A 4 KiB write plus fsync, the floor under every synchronous=FULL commit on this disk. */
function fsyncLatency(dir: string): number {
  const file = join(dir, `fsync-probe-${process.pid}`);
  const fd = openSync(file, "w");
  const buf = Buffer.alloc(4096, 1);
  const ms: number[] = [];
  try {
    for (let i = 0; i < 200; i++) {
      const t = performance.now();
      writeSync(fd, buf);
      fsyncSync(fd);
      ms.push(performance.now() - t);
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return median(ms);
}

function disk(dir: string): string {
  try {
    const lines = execFileSync("df", ["-hT", dir], { encoding: "utf8" }).trim().split("\n");
    const cols = (lines[1] ?? "").split(/\s+/);
    return `${cols[0] ?? "?"} ${cols[1] ?? "?"}, ${cols[2] ?? "?"} (${cols[4] ?? "?"} free)`;
  } catch {
    return "unknown";
  }
}

export function describeMachine(dir: string): Machine {
  const db = new Database(":memory:");
  const sqlite = db.prepare("SELECT sqlite_version()").pluck().get() as string;
  db.close();
  const require = createRequire(import.meta.url);
  const pkg = JSON.parse(readFileSync(require.resolve("better-sqlite3/package.json"), "utf8")) as {
    version: string;
  };
  return {
    nproc: cpus().length,
    cpu: cpus()[0]?.model ?? "unknown",
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    sqlite,
    better_sqlite3: pkg.version,
    disk: disk(dir),
    fsync_4k_ms: fsyncLatency(dir),
    load_before: loadavg(),
  };
}
