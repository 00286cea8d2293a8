// The whole salvage path under a running writer: damage, writes that go to the spool, recover
// --output (originals untouched), a write after the recovery, then restore: every acknowledged
// message is in the restored store, the spool is folded once, and the profile works afterwards.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { StoreCorruptError } from "../src/store/errors.js";
import { recoverStore } from "../src/store/recover/recover.js";
import { restoreStore } from "../src/store/recover/restore.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import { checkpoint, overwritePages } from "./helpers/corrupt.js";
import { tempDir, tempProfile } from "./helpers/tmp.js";
import { buildStore, digests, messagesIn, pageMap, readJson } from "./recover-fixtures.js";

const SEED = Number(process.env.TENAX_SEED ?? 11);

/** Append and expect the store to refuse and spool it; returns the uid that was acknowledged. */
async function spooled(store: Store, session: string, text: string): Promise<string> {
  const op = store.messageOp({ session_id: session, role: "user", content: text });
  const error = await store.write([op]).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(StoreCorruptError);
  expect((error as StoreCorruptError).spooledTo).not.toBeNull();
  return op.op === "message.append" ? op.uid : "";
}

describe("recover --output and restore with a spool", () => {
  it("folds every acknowledged write in, once, and leaves a working profile", async () => {
    console.log(`recover-spool seed=${SEED}`);
    const paths = tempProfile();
    const { store, written } = await buildStore(paths, { sessions: 3, messagesPerSession: 150, seed: SEED });
    checkpoint(paths.state);
    const map = pageMap(paths.state, "messages");
    const leaves = [...map.leaves.keys()];
    // A middle leaf and the rightmost one: every append touches the latter, so writes get spooled.
    const damaged = [leaves[4], leaves[leaves.length - 1]].filter((p): p is number => p !== undefined);
    const lost = new Set(damaged.flatMap((p) => map.leaves.get(p) ?? []));
    overwritePages(paths.state, damaged, "garbage", SEED);

    const [s0, s1] = written.sessions;
    const acked = [
      await spooled(store, s0 ?? "", "after damage one"),
      await spooled(store, s1 ?? "", "after damage two"),
    ];
    const fresh = store.messageOp({ session_id: "s_new_during_outage", role: "user", content: "orphan" });
    await store.write([fresh]).catch(() => undefined);
    if (fresh.op === "message.append") acked.push(fresh.uid);

    const before = digests(paths.state);
    const output = join(tempDir(), "recovered.db");
    const report = await recoverStore({ source: paths.state, output });
    expect(digests(paths.state)).toEqual(before);
    expect(report.tables.messages).toMatchObject({
      found: written.messages.length,
      salvaged: written.messages.length - lost.size,
      lost: lost.size,
      lost_is_lower_bound: false,
    });
    expect(report.spool).toMatchObject({ records: 3, messages_new: 3, duplicates: 0 });
    expect(report.output).toMatchObject({
      written: { sessions: 3, placeholder_sessions: 0, messages: written.messages.length - lost.size },
      spool: { records: 3, messages: 3, duplicates: 0, failed: [] },
      integrity: { status: "ok" },
    });
    const rows = messagesIn(output);

    for (const m of written.messages) expect(rows.has(m.uid)).toBe(!lost.has(m.id));
    for (const uid of acked) expect(rows.has(uid)).toBe(true);
    const manifest = readJson(join(report.forensics.dir, "manifest.json")) as {
      files: { sha256: string; role: string }[];
    };
    expect(manifest.files.find((f) => f.role === "db")?.sha256).toBe(before.db);

    // Written after the recovery: lands in the same spool file, past the bytes the recovery read.
    const late = await spooled(store, s0 ?? "", "written after the recovery");
    await releaseStore(store);

    // The damaged store's read-only guard still holds state.db open in this process: refused.
    await expect(restoreStore({ paths, from: output })).rejects.toMatchObject({ code: "restore_in_use" });
    (store as unknown as { guard: Database.Database | null }).guard?.close();

    const restored = await restoreStore({ paths, from: output });
    expect(restored.spool).toMatchObject({ records: 1, messages: 1, duplicates: 0, failed: [] });
    expect(restored.spool.moved).toEqual(report.spool.files);
    expect(readdirSync(paths.spool).filter((f) => f.endsWith(".jsonl"))).toEqual([]);
    expect(readdirSync(join(paths.spool, "replayed"))).toEqual(report.spool.files);
    expect(readdirSync(restored.replaced.dir).sort()).toEqual([
      "search.db",
      "state.db",
      "state.db-shm",
      "state.db-wal",
    ]);

    const back = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    try {
      expect((await back.checkIntegrity("full")).status).toBe("ok");
      const all = new Set(
        (
          await Promise.all(
            (
              await back.listSessions({ limit: 100 })
            ).map(async (s) => (await back.getMessages(s.id)).map((m) => m.uid)),
          )
        ).flat(),
      );
      for (const uid of [...acked, late]) expect(all.has(uid)).toBe(true);
      expect(all.size).toBe(written.messages.length - lost.size + acked.length + 1);
      expect((await back.getSession("s_new_during_outage"))?.source).toBe("recovered");
      const after = await back.appendMessage({
        session_id: s1 ?? "",
        role: "user",
        content: "zebra works again",
      });
      expect(after.duplicate).toBe(false);
      back.index.flush();
      expect((await back.search("zebra")).hits.map((h) => h.message.content)).toEqual(["zebra works again"]);
      expect((await back.search("orphan")).hits).toHaveLength(1);
    } finally {
      await releaseStore(back);
    }
  });
});
