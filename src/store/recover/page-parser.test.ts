// The page parser against hostile input: known varint encodings, then seeded garbage (random pages,
// random byte flips in a real store and its WAL) that must never throw or hang, and must never
// produce a row of the wrong shape.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempDir, tempProfile } from "../../../test/helpers/tmp.js";
import { seededRandom } from "../../core/deps.js";
import { openStore, releaseStore } from "../registry.js";
import {
  indexLocalPayloadSize,
  localPayloadSize,
  parseBtreePage,
  readIndexCell,
  readTableLeafCell,
  readVarint,
} from "./btree-page.js";
import { PageImage } from "./page-image.js";
import { salvagePages } from "./page-salvage.js";
import { readRecordHeader } from "./record.js";
import { RECORD_COLUMNS, ROWID_TABLES, TABLE_COLUMNS } from "./row-shapes.js";
import { scanWal } from "./wal-reader.js";

const SEED = Number(process.env.TENAX_SEED ?? 424242);

describe("varints", () => {
  it("decode SQLite's encodings and refuse one cut short", () => {
    const v = (...bytes: number[]) => readVarint(Uint8Array.from(bytes), 0, bytes.length);
    expect(v(0x7f)).toEqual({ value: 127n, next: 1 });
    expect(v(0x81, 0x00)).toEqual({ value: 128n, next: 2 });
    expect(v(0x82, 0xff, 0x7f)?.value).toBe(2n * 16384n + 127n * 128n + 127n);
    expect(v(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)).toEqual({ value: -1n, next: 9 });
    expect(v(0x81, 0x81)).toBeNull();
    expect(localPayloadSize(100, 4096)).toBe(100);
    expect(localPayloadSize(5000, 4096)).toBeLessThanOrEqual(4061);
    // Index pages keep less on the page: all of it up to 1002 bytes of 4096, else 489 and then
    // whatever makes the overflow pages come out full, if that still fits.
    expect(indexLocalPayloadSize(1002, 4096)).toBe(1002);
    expect(indexLocalPayloadSize(1003, 4096)).toBe(489);
    expect(indexLocalPayloadSize(489 + 4092 + 100, 4096)).toBe(589);
  });
});

describe("records, a WITHOUT ROWID table, read from its index pages", () => {
  it("every record SQLite reads, on leaves, interior pages, overflow pages and in the WAL", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "records" });
    for (let i = 0; i < 600; i++) {
      const text = i % 50 === 0 ? "z".repeat(3000 + i) : `note ${i} ${"x".repeat(i % 200)}`;
      await store.putRecord(
        i % 3 === 0 ? "memory" : "run_event",
        `k${String(i).padStart(5, "0")}`,
        { text },
        {
          sessionId: i % 3 === 0 ? null : session,
        },
      );
    }
    await store.putRecord("memory", "k00003", null); // a tombstone: a row with a NULL value
    const image = PageImage.open(paths.state, `${paths.state}-wal`);
    const pages = salvagePages(image);
    image.close();
    const db = new Database(paths.state, { readonly: true });
    const sql = db.prepare("SELECT * FROM records").all() as Record<string, unknown>[];
    const interior = db
      .prepare("SELECT count(*) FROM dbstat WHERE name = 'records' AND pagetype = 'internal'")
      .pluck()
      .get() as number;
    db.close();
    await releaseStore(store);
    expect(pages.wal.applied).toBeGreaterThan(0);
    expect(interior).toBeGreaterThan(0);
    expect(pages.records.broken.size).toBe(0);
    expect(pages.records.damagedCells).toBe(0);
    expect(pages.records.copies.size).toBe(sql.length);
    for (const row of sql) {
      const copies = pages.records.copies.get(JSON.stringify([row.kind, row.key])) ?? [];
      expect(copies.map((c) => c.record.values)).toEqual([RECORD_COLUMNS.map((c) => row[c])]);
    }
    expect(pages.unreadable).toEqual([]);
  });

  it("reads an index cell's payload and where it spills, on leaves and interior pages", () => {
    const page = Buffer.alloc(4096);
    // A leaf cell at 3000: payload of 2000 bytes, 489 of them here, then overflow page 7.
    page.writeUInt16BE(0x8f50, 3000); // varint 2000
    page.writeUInt32BE(7, 3002 + 489);
    expect(readIndexCell(page, 3000, 4096, false)).toMatchObject({
      payloadSize: 2000,
      overflow: 7,
      end: 3495,
    });
    // The same cell behind a left-child pointer, as an interior page holds it.
    page.writeUInt32BE(12, 2996);
    expect(readIndexCell(page, 2996, 4096, true)).toMatchObject({
      payloadSize: 2000,
      overflow: 7,
      end: 3495,
    });
    // A cell whose payload would run past the page is refused: 900 bytes, all local, from 3802.
    page.writeUInt16BE(0x8704, 3800);
    expect(readIndexCell(page, 3800, 4096, false)).toBeNull();
  });
});

describe("garbage never crashes the parser", () => {
  it("random pages, some dressed as table leaves", () => {
    console.log(`page-parser seed=${SEED}`);
    const random = seededRandom(SEED);
    const page = Buffer.alloc(4096);
    let parsed = 0;
    for (let n = 0; n < 20_000; n++) {
      for (let i = 0; i < page.length; i++) page[i] = Math.floor(random() * 256);
      if (n % 2 === 0) {
        page[0] = 0x0d;
        page.writeUInt16BE(Math.floor(random() * 40), 3);
        page.writeUInt16BE(2000 + Math.floor(random() * 2000), 5);
        page.writeUInt16BE(0, 1);
        page[7] = 0;
      }
      const btree = parseBtreePage(page, 2 + (n % 5), 4096);
      if (btree === null) continue;
      parsed++;
      for (const at of btree.cells) {
        const cell = readTableLeafCell(page, at, 4096);
        if (cell !== null) readRecordHeader(cell.local, cell.payloadSize);
      }
    }
    expect(parsed).toBeGreaterThan(100);
  });

  it("random byte flips in a real store and its WAL: rows keep their shape, nothing throws", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "fuzz" });
    for (let i = 0; i < 300; i++) {
      await store.appendMessage({
        session_id: session,
        role: "user",
        content: `m${i} ${"y".repeat(i * 37)}`,
      });
      await store.putRecord(
        "todo",
        `t${i}`,
        { text: "z".repeat(i * 11) },
        { sessionId: i % 2 ? session : null },
      );
    }
    const dir = tempDir();
    const db = join(dir, "state.db");
    copyFileSync(paths.state, `${db}.orig`);
    copyFileSync(`${paths.state}-wal`, `${db}-wal.orig`);
    await releaseStore(store);
    const random = seededRandom(SEED + 1);
    for (let round = 0; round < 25; round++) {
      for (const [orig, target] of [
        [`${db}.orig`, db],
        [`${db}-wal.orig`, `${db}-wal`],
      ] as const) {
        const bytes = readFileSync(orig);
        for (let flips = 1 + Math.floor(random() * 200); flips > 0; flips--) {
          bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
        }
        writeFileSync(target, bytes);
      }
      const started = performance.now();
      const image = PageImage.open(db, `${db}-wal`);
      try {
        const result = salvagePages(image);
        for (const t of ROWID_TABLES) {
          for (const row of result.rows[t].values()) {
            expect(row.values).toHaveLength(TABLE_COLUMNS[t].length);
            expect(Number.isSafeInteger(row.rowid)).toBe(true);
          }
        }
        for (const copies of result.records.copies.values()) {
          for (const { record } of copies) {
            expect(record.values).toHaveLength(RECORD_COLUMNS.length);
            expect(record.id).toBe(JSON.stringify([record.kind, record.key]));
            expect(Number.isSafeInteger(record.updatedAt)).toBe(true);
          }
        }
      } finally {
        image.close();
      }
      expect(performance.now() - started).toBeLessThan(5000);
    }
  });

  it("a header claiming billions of pages is counted, not walked", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await store.createSession({ title: "big claim" });
    await releaseStore(store);
    const db = join(tempDir(), "state.db");
    const bytes = readFileSync(paths.state);
    bytes.writeUInt32BE(0xfffffff0, 28);
    bytes.writeUInt32BE(bytes.readUInt32BE(24), 92);
    writeFileSync(db, bytes);
    const started = performance.now();
    const image = PageImage.open(db, null);
    const result = salvagePages(image);
    image.close();
    expect(performance.now() - started).toBeLessThan(2000);
    expect(result.missing).toBe(0xfffffff0 - bytes.length / 4096);
    expect(result.rows.sessions.size).toBe(1);
  });

  it("a WAL of random bytes is ignored, as SQLite ignores it", () => {
    const random = seededRandom(SEED + 2);
    const file = join(tempDir(), "x.db-wal");
    const bytes = Buffer.alloc(32 + 3 * 4120);
    for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    writeFileSync(file, bytes);
    const scan = scanWal(file, 4096);
    expect(scan).toMatchObject({ headerValid: false, applied: [], stranded: [] });
    expect(scan.problem).toMatch(/WAL header is damaged/);
  });
});
