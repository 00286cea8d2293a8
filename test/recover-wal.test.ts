// Recovery of a store whose newest writes are still in a damaged WAL: the page parser applies the
// same frames SQLite would (up to the last good commit), and committed frames past the damage are
// reported, with their rows counted as lost.
import { closeSync, openSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../src/core/deps.js";
import { PageImage } from "../src/store/recover/page-image.js";
import { salvagePages } from "../src/store/recover/page-salvage.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import { checkpoint } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import {
  buildStore,
  content,
  digests,
  messagesIn,
  recordKeyOf,
  recordsIn,
  type WrittenMessage,
} from "./recover-fixtures.js";

const SEED = Number(process.env.TENAX_SEED ?? 5);
const FRAME = 24 + 4096;
const frames = (wal: string) => Math.floor((statSync(wal).size - 32) / FRAME);

function garbage(file: string, offset: number, length: number, seed: number): void {
  const random = seededRandom(seed);
  const buf = Buffer.alloc(length);
  for (let i = 0; i < length; i++) buf[i] = Math.floor(random() * 256);
  const fd = openSync(file, "r+");
  try {
    writeSync(fd, buf, 0, length, offset);
  } finally {
    closeSync(fd);
  }
}

/** A checkpointed store, then `batches` transactions of 20 messages left in the WAL. */
async function storeWithWal(batches: number) {
  const paths = tempProfile();
  const { store, written } = await buildStore(paths, { sessions: 2, messagesPerSession: 100, seed: SEED });
  checkpoint(paths.state);
  store.index.stop(); // no index flushes between the batches: each batch is one transaction
  const random = seededRandom(SEED);
  const session = written.sessions[0] ?? "";
  const inWal: { messages: WrittenMessage[]; framesAfter: number }[] = [];
  for (let b = 0; b < batches; b++) {
    const batch = Array.from({ length: 20 }, () => ({
      session_id: session,
      role: "user",
      content: content(random, false),
    }));
    const applied = await appendAll(store, batch);
    inWal.push({ messages: applied, framesAfter: frames(`${paths.state}-wal`) });
  }
  return { paths, store, written, inWal };
}

async function appendAll(store: Store, batch: { session_id: string; role: string; content: string }[]) {
  const ops = batch.map((m) => store.messageOp(m));
  const results = await store.write(ops);
  return results.map((r, i) => {
    const op = ops[i];
    const uid = op?.op === "message.append" ? op.uid : "";
    return {
      id: r.message?.id ?? 0,
      uid,
      session_id: batch[i]?.session_id ?? "",
      seq: r.message?.seq ?? 0,
      content: batch[i]?.content ?? "",
    };
  });
}

describe("recover a store with a damaged WAL", () => {
  it("applies the frames before the damage and counts the committed rows past it as lost", async () => {
    const { paths, store, written, inWal } = await storeWithWal(10);
    const wal = `${paths.state}-wal`;
    const broken = inWal[4]?.framesAfter ?? 0; // the first frame of batch 6
    garbage(wal, 32 + broken * FRAME + 24, 4096, SEED);
    const before = digests(paths.state);
    const output = join(tempDir(), "new.db");
    const report = await recoverStore({ source: paths.state, output });
    await releaseStore(store);
    expect(before.wal).not.toBe("missing");
    const kept = [...written.messages, ...inWal.slice(0, 5).flatMap((b) => b.messages)];
    const gone = inWal.slice(5).flatMap((b) => b.messages);
    expect(report.wal).toMatchObject({ present: true, header_valid: true, applied: broken });
    expect(report.wal.stranded).toBe((inWal[9]?.framesAfter ?? 0) - broken - 1);
    expect(report.tables.messages).toMatchObject({
      salvaged: kept.length,
      found: kept.length + gone.length,
      lost: gone.length,
      lost_is_lower_bound: true,
    });
    expect(report.complete).toBe(false);
    const rows = messagesIn(output);
    expect(new Set(rows.keys())).toEqual(new Set(kept.map((m) => m.uid)));
    expect(report.output?.integrity.status).toBe("ok");
  });

  it("records: those committed before the damage come back, those past it are counted as lost", async () => {
    const paths = tempProfile();
    const { store, written } = await buildStore(paths, { sessions: 2, messagesPerSession: 20, seed: SEED });
    checkpoint(paths.state);
    store.index.stop();
    const wal = `${paths.state}-wal`;
    const random = seededRandom(SEED);
    const session = written.sessions[0] ?? "";
    const batches: { keys: string[]; framesAfter: number }[] = [];
    for (let b = 0; b < 10; b++) {
      const ops = Array.from({ length: 20 }, (_, i) => ({
        op: "record.put" as const,
        kind: "run_event",
        key: `run_1/${String(b * 20 + i).padStart(10, "0")}`,
        session_id: session,
        value: JSON.stringify({ id: b * 20 + i, text: content(random, false) }),
        updated_at: 1_700_000_000_000 + b * 20 + i,
      }));
      await store.write(ops); // one transaction a batch
      batches.push({ keys: ops.map((o) => recordKeyOf(o.kind, o.key)), framesAfter: frames(wal) });
    }
    const broken = batches[4]?.framesAfter ?? 0; // the first frame of batch 6
    garbage(wal, 32 + broken * FRAME + 24, 4096, SEED);
    const output = join(tempDir(), "new.db");
    const report = await recoverStore({ source: paths.state, output });
    await releaseStore(store);
    const kept = batches.slice(0, 5).flatMap((b) => b.keys);
    const gone = new Set(batches.slice(5).flatMap((b) => b.keys));
    const r = report.tables.records;
    expect(r).toMatchObject({
      salvaged: kept.length,
      found: kept.length + r.lost,
      lost_is_lower_bound: true,
    });
    // What the stranded frames show is counted; a batch whose pages lay only in the damaged frame is not.
    expect(r.lost).toBeGreaterThan(0);
    expect(r.lost).toBeLessThanOrEqual(gone.size);
    for (const k of r.lost_keys ?? []) expect(gone.has(recordKeyOf(k.kind, k.key))).toBe(true);
    expect(new Set(recordsIn(output).keys())).toEqual(new Set(kept));
  });

  it("ignores a WAL whose header is damaged, as SQLite does, and says rows may be missing", async () => {
    const { paths, store, written, inWal } = await storeWithWal(3);
    garbage(`${paths.state}-wal`, 0, 32, SEED);
    const report = await recoverStore({ source: paths.state });
    await releaseStore(store);
    expect(report.wal).toMatchObject({ present: true, header_valid: false, applied: 0 });
    expect(report.wal.problem).toMatch(/WAL header is damaged/);
    expect(report.tables.messages).toMatchObject({
      salvaged: written.messages.length,
      lost_is_lower_bound: true,
    });
    expect(inWal.length).toBe(3);
    expect(report.complete).toBe(false);
  });

  it("reads exactly what SQLite reads from a healthy WAL (page parser against SQL)", async () => {
    const { paths, store } = await storeWithWal(4);
    const image = PageImage.open(paths.state, `${paths.state}-wal`);
    const pages = salvagePages(image);
    image.close();
    const sql = messagesIn(paths.state);
    await releaseStore(store);
    expect(pages.wal.applied).toBeGreaterThan(0);
    expect(pages.rows.messages.size).toBe(sql.size);
    for (const row of pages.rows.messages.values()) {
      const uid = String(row.values[1]);
      expect(sql.get(uid)).toMatchObject({ id: row.rowid, content: row.values[5] });
    }
  });
});
