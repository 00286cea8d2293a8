// The page parser against hostile input: known varint encodings, then seeded garbage (random pages,
// random byte flips in a real store and its WAL) that must never throw or hang, and must never
// produce a row of the wrong shape.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir, tempProfile } from "../../../test/helpers/tmp.js";
import { seededRandom } from "../../core/deps.js";
import { openStore, releaseStore } from "../registry.js";
import { localPayloadSize, parseBtreePage, readTableLeafCell, readVarint } from "./btree-page.js";
import { PageImage } from "./page-image.js";
import { salvagePages } from "./page-salvage.js";
import { readRecordHeader } from "./record.js";
import { TABLE_COLUMNS, TABLES } from "./row-shapes.js";
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
        for (const t of TABLES) {
          for (const row of result.rows[t].values()) {
            expect(row.values).toHaveLength(TABLE_COLUMNS[t].length);
            expect(Number.isSafeInteger(row.rowid)).toBe(true);
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
