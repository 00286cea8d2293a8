// Damage a store the way disks and stray programs do: garbage, zeros, truncation, or a well-formed page
// written in the wrong place, page by page.
import { createHash } from "node:crypto";
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync, writeSync } from "node:fs";
import Database from "better-sqlite3";
import { seededRandom } from "../../src/core/deps.js";

export const PAGE = 4096;

/** Root pages of the store's tables and indexes, read through a separate connection. */
export function rootPages(path: string): Record<string, number> {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db.prepare("SELECT name, rootpage FROM sqlite_schema WHERE rootpage > 0").all() as {
      name: string;
      rootpage: number;
    }[];
    return Object.fromEntries(rows.map((r) => [r.name, r.rootpage]));
  } finally {
    db.close();
  }
}

/** Every page of a table or index b-tree (dbstat), with its kind. */
export function btreePages(path: string, name: string): { pageno: number; pagetype: string }[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT pageno, pagetype FROM dbstat WHERE name = ? ORDER BY pageno").all(name) as {
      pageno: number;
      pagetype: string;
    }[];
  } finally {
    db.close();
  }
}

/** Move everything from the WAL into the main file, from a separate connection. */
export function checkpoint(path: string): void {
  const db = new Database(path);
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}

export function overwritePages(path: string, pages: number[], kind: "garbage" | "zero", seed: number): void {
  const random = seededRandom(seed);
  const fd = openSync(path, "r+");
  try {
    for (const page of pages) {
      const buf = Buffer.alloc(PAGE);
      if (kind === "garbage") for (let i = 0; i < PAGE; i++) buf[i] = Math.floor(random() * 256);
      writeSync(fd, buf, 0, PAGE, (page - 1) * PAGE);
    }
  } finally {
    closeSync(fd);
  }
}

/** Garbage or zeros over `length` bytes at `offset` (a WAL frame, say, which is not page-aligned). */
export function overwriteBytes(
  path: string,
  offset: number,
  length: number,
  kind: "garbage" | "zero",
  seed: number,
): void {
  const random = seededRandom(seed);
  const buf = Buffer.alloc(length);
  if (kind === "garbage") for (let i = 0; i < length; i++) buf[i] = Math.floor(random() * 256);
  const fd = openSync(path, "r+");
  try {
    writeSync(fd, buf, 0, length, offset);
  } finally {
    closeSync(fd);
  }
}

export function fileDigest(path: string): string {
  if (!existsSync(path)) return "missing";
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Garbage over every page of a database file but the first (its header stays readable). */
export function garbageAfterHeader(path: string, seed: number): void {
  const pages = Math.floor(statSync(path).size / PAGE);
  overwritePages(
    path,
    Array.from({ length: pages - 1 }, (_, i) => i + 2),
    "garbage",
    seed,
  );
}

/** A copy of page `from` over page `to`: a well-formed page in the wrong place (a misdirected write). */
export function copyPage(path: string, from: number, to: number): void {
  const buf = Buffer.alloc(PAGE);
  const fd = openSync(path, "r+");
  try {
    readSync(fd, buf, 0, PAGE, (from - 1) * PAGE);
    writeSync(fd, buf, 0, PAGE, (to - 1) * PAGE);
  } finally {
    closeSync(fd);
  }
}

/** The first freelist trunk page the main file's header names (0: no free pages). */
export function freelistTrunk(path: string): number {
  const header = Buffer.alloc(100);
  const fd = openSync(path, "r");
  try {
    readSync(fd, header, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  return header.readUInt32BE(32);
}

/** The pages of a table's overflow chains (long values), read through dbstat. */
export function overflowPages(path: string, name: string): number[] {
  return btreePages(path, name)
    .filter((p) => p.pagetype === "overflow")
    .map((p) => p.pageno);
}

/**
 * Swap the first two child page numbers of a table's interior page: every byte stays plausible (a
 * page number in range, a well-formed page), but the tree's order is broken.
 */
export function swapChildren(path: string, pgno: number): void {
  const buf = Buffer.alloc(PAGE);
  const fd = openSync(path, "r+");
  try {
    readSync(fd, buf, 0, PAGE, (pgno - 1) * PAGE);
    const base = pgno === 1 ? 100 : 0;
    if (buf[base] !== 5 || buf.readUInt16BE(base + 3) < 2)
      throw new Error(`page ${pgno} is not a table interior page with two cells`);
    const first = buf.readUInt16BE(base + 12);
    const second = buf.readUInt16BE(base + 14);
    const a = buf.readUInt32BE(first);
    buf.writeUInt32BE(buf.readUInt32BE(second), first);
    buf.writeUInt32BE(a, second);
    writeSync(fd, buf, 0, PAGE, (pgno - 1) * PAGE);
  } finally {
    closeSync(fd);
  }
}
