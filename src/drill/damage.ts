// The drill's disk faults: garbage written over chosen pages of a SQLite file from outside the
// process that uses it, the way a bad disk or a stray program would. Only ever a scratch profile's.
import { closeSync, openSync, statSync, writeSync } from "node:fs";
import Database from "better-sqlite3";
import { seededRandom } from "../core/deps.js";

const PAGE = 4096;

/** The pages of the b-trees named (tables or indexes), read through dbstat on a connection of our own. */
export function btreePages(file: string, names: readonly string[]): number[] {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare(`SELECT pageno FROM dbstat WHERE name IN (${names.map(() => "?").join(", ")}) ORDER BY pageno`)
      .all(...names) as { pageno: number }[];
    return rows.map((r) => r.pageno);
  } finally {
    db.close();
  }
}

/**
 * Move the WAL into the main file from a connection of our own, so that damage written to the main
 * file is not shadowed by newer copies of its pages in the WAL. False when a reader kept it from
 * finishing.
 */
export function checkpointWal(file: string): boolean {
  const db = new Database(file);
  try {
    const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
    return result?.busy === 0;
  } finally {
    db.close();
  }
}

/** Overwrite whole pages with seeded garbage (page 1 is page number 1, as SQLite counts). */
export function garbagePages(file: string, pages: readonly number[], seed: number): void {
  const random = seededRandom(seed);
  const fd = openSync(file, "r+");
  try {
    for (const page of pages) {
      const buf = Buffer.alloc(PAGE);
      for (let i = 0; i < PAGE; i++) buf[i] = Math.floor(random() * 256);
      writeSync(fd, buf, 0, PAGE, (page - 1) * PAGE);
    }
  } finally {
    closeSync(fd);
  }
}

/** Garbage over every page but the first, whose header stays readable. */
export function garbageAfterHeader(file: string, seed: number): void {
  const pages = Math.floor(statSync(file).size / PAGE);
  garbagePages(
    file,
    Array.from({ length: Math.max(0, pages - 1) }, (_, i) => i + 2),
    seed,
  );
}
