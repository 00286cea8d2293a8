// The WAL sync off the event loop: a write is acknowledged once its WAL frames are synced; a
// failed sync ends this process's writing for good (spooled, health down), never a quiet loss.
import {
  closeSync,
  existsSync,
  fdatasync,
  fdatasyncSync,
  openSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { until } from "../../test/helpers/gateway.js";
import { tempDir, tempProfile } from "../../test/helpers/tmp.js";
import { openStore, releaseStore } from "./registry.js";
import { readSpool } from "./spool.js";
import { WalSync } from "./wal-sync.js";

describe("WalSync", () => {
  it("syncs, shares one later sync among callers that came while one ran, and closes after it", async () => {
    const file = join(tempDir(), "state.db-wal");
    writeFileSync(file, "frames");
    const sync = new WalSync(file);
    const first = sync.sync();
    // These came while the first ran: its start may precede their frames, so they get the next.
    const second = sync.sync();
    const third = sync.sync();
    expect(second).toBe(third);
    expect(second).not.toBe(first);
    // Closing must not close the file under the running sync, and serves the waiting ones at once.
    sync.close();
    await expect(first).resolves.toBeUndefined();
    await expect(second).resolves.toBeUndefined();
    await expect(sync.sync()).rejects.toThrow(/closed/);
  });

  it("a commit outside the groups during a sync holds that sync's waiters for another one", async () => {
    const pending: Array<(error: NodeJS.ErrnoException | null) => void> = [];
    const sync = new WalSync("unused-wal", {
      openSync: () => 42,
      fdatasync: (_fd, done) => pending.push(done),
      fdatasyncSync: () => {},
      closeSync: () => {},
    });
    let answered = false;
    const waiter = sync.sync().then(() => {
      answered = true;
    });
    sync.touched(); // the search queue committed while the first sync ran
    pending.shift()?.(null);
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    expect(pending).toHaveLength(1); // a second sync, started after the touch
    pending.shift()?.(null);
    await waiter;
    expect(answered).toBe(true);
    // Without a touch, one sync answers.
    const quiet = sync.sync();
    pending.shift()?.(null);
    await quiet;
    expect(pending).toHaveLength(0);
  });

  it("a failed sync is final: every later sync fails with its error", async () => {
    const sync = new WalSync(join(tempDir(), "missing-wal"));
    const error = await sync.sync().catch((e: unknown) => e);
    expect((error as NodeJS.ErrnoException).code).toBe("ENOENT");
    await expect(sync.sync()).rejects.toBe(error);
    expect(() => sync.syncNow()).toThrow(error as Error);
  });
});

describe("the store with its WAL synced off the event loop", () => {
  it("damage found between a write's commit and its sync is damage, not a failed disk: the write is synced and acknowledged", async () => {
    const pending: Array<(error: NodeJS.ErrnoException | null) => void> = [];
    let blockingSyncs = 0;
    const paths = tempProfile();
    const store = await openStore(paths, {
      integrityCheckTimeoutMs: 0,
      walFiles: {
        openSync: (path, flags) => openSync(path, flags),
        fdatasync: (_fd, done) => pending.push(done),
        fdatasyncSync: () => {
          blockingSyncs++;
        },
        closeSync: (fd) => closeSync(fd),
      },
    });
    const created = store.createSession({ title: "before" });
    await until(() => pending.length === 1);
    pending.shift()?.(null);
    const session = await created;
    const write = store.appendMessage({ session_id: session, role: "user", content: "committed" });
    await until(() => pending.length === 1);
    // The search queue commits while that sync runs (by itself 25 ms after the write, or now), so
    // the write waits for one sync more; the page check then finds damage (in a page no write
    // touches) before that next sync starts.
    store.index.flush();
    expect(store.health().search.pending).toBe(0);
    store.reportDamage("integrity check failed: Tree 7 page 12: btreeInitPage() returns error code 11");
    pending.shift()?.(null);
    await expect(write).resolves.toMatchObject({ seq: 1, duplicate: false });
    expect(blockingSyncs).toBe(1); // what was committed was synced as the writer stopped
    const health = store.health();
    expect(health.disk_failure).toBeNull();
    expect(health.corrupt?.detail).toMatch(/integrity check failed/);
    await expect(store.createSession({ title: "after" })).rejects.toMatchObject({ code: "store_corrupt" });
    await releaseStore(store);
  });

  it("a staged write is readable once applied, before it is durable; a refused one rejects both", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "staged" });
    const staged = store.writeStaged([store.messageOp({ session_id: session, role: "user", content: "x" })]);
    let durable = false;
    void staged.durable.then(() => {
      durable = true;
    });
    await staged.applied;
    // Committed and visible; its sync (a thread-pool call) cannot have answered within this turn.
    expect((await store.getMessages(session)).map((m) => m.content)).toEqual(["x"]);
    expect(durable).toBe(false);
    await staged.durable;
    expect(durable).toBe(true);
    const refused = store.writeStaged([
      store.messageOp({ session_id: "s_missing", role: "user", content: "y" }),
    ]);
    await expect(refused.applied).rejects.toThrow();
    await expect(refused.durable).rejects.toThrow();
    await releaseStore(store);
  });

  it("a turn's start acknowledged by its answer makes no sync of its own: the end's one sync covers both", async () => {
    const paths = tempProfile();
    let syncs = 0;
    const store = await openStore(paths, {
      integrityCheckTimeoutMs: 0,
      walFiles: {
        openSync: (path, flags) => openSync(path, flags),
        fdatasync: (fd, done) => {
          syncs++;
          fdatasync(fd, done);
        },
        fdatasyncSync: (fd) => fdatasyncSync(fd),
        closeSync: (fd) => closeSync(fd),
      },
    });
    // The search queue's own commits would hold a sync's waiters for one more (see WalSync).
    store.index.stop();
    const session = await store.createSession({ title: "one sync" });
    const question = { role: "user" as const, content: "question" };
    syncs = 0;
    const lazy = store.beginTurn({ sessionId: session, leaseMs: 60_000, question, durableWithNext: true });
    await lazy.durable;
    // Committed (the transcript holds the question, the session is held) and not synced.
    expect(syncs).toBe(0);
    expect((await store.getSession(session))?.last_turn).toMatchObject({ id: lazy.id, status: "running" });
    expect((await store.getMessages(session)).map((m) => m.content)).toEqual(["question"]);
    await store.write([
      store.messageOp({ session_id: session, role: "assistant", content: "answer", turn_id: lazy.id }),
      { op: "turn.update", id: lazy.id, status: "completed", ended_at: Date.now(), lease_owner: null },
    ]);
    expect(syncs).toBe(1);
    // A start its caller tells of at once is durable first: its own sync.
    const told = store.beginTurn({ sessionId: session, leaseMs: 60_000, question });
    await told.durable;
    expect(syncs).toBe(2);
    // A lazy write committed in one group with a synced one is synced with it.
    const [a, b] = [
      store.writeStaged([store.messageOp({ session_id: session, role: "user", content: "a" })], {
        durableWithNext: true,
      }),
      store.writeStaged([store.messageOp({ session_id: session, role: "user", content: "b" })]),
    ];
    await Promise.all([a.durable, b.durable]);
    expect(syncs).toBe(3);
    await releaseStore(store);
  });

  it("acknowledges a write once it is on disk, with SQLite's own commits left unsynced", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "durable" });
    await store.appendMessage({ session_id: session, role: "user", content: "kept" });
    // Group commits run with SQLite's synchronous=NORMAL; every other commit stays FULL.
    const reader = new Database(paths.state, { readonly: true });
    expect(reader.prepare("SELECT count(*) FROM messages").pluck().get()).toBe(1);
    reader.close();
    expect(store.health().disk_failure).toBeNull();
    await releaseStore(store);
  });

  it("after a failed sync it refuses and spools every write, and its health says the disk failed", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const session = await store.createSession({ title: "before" });
    // The WAL file vanishes under the open store: the next sync cannot even open it.
    const other = tempProfile();
    const second = await openStore(other, { integrityCheckTimeoutMs: 0 });
    const wal = `${other.state}-wal`;
    expect(existsSync(wal)).toBe(true);
    unlinkSync(wal);
    const refused = await second.createSession({ title: "lost?" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "store_io" });
    expect(String((refused as Error).message)).toMatch(/may or may not be stored/);
    const health = second.health();
    expect(health.writable).toBe(false);
    expect(health.disk_failure?.detail).toMatch(/ENOENT/);
    // Later writes never reach the file: they are kept in the spool, and say where.
    const later = await second.createSession({ title: "spooled" }).catch((e: unknown) => e);
    expect(later).toMatchObject({ code: "store_io" });
    expect(String((later as Error).message)).toMatch(/kept in/);
    expect(readSpool(other.spool).records).toHaveLength(1);
    expect(second.health().spooled_records).toBe(1);
    await releaseStore(second);
    // The first store, untouched, goes on.
    await store.appendMessage({ session_id: session, role: "user", content: "fine" });
    expect(store.health().disk_failure).toBeNull();
    await releaseStore(store);
  });
});
