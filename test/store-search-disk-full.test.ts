// A full disk never destroys the full-text index, for real: the profile lives on a tiny tmpfs.
// When the disk fills, indexing pauses and search.db is kept whole (no empty file, nothing moved
// aside), readers and the CLI keep working, and once space is freed what was acknowledged in the
// meantime is indexed by itself, in slices. A full state.db met while dropping indexed entries
// pauses the same way. A damaged index whose rebuild meets a full disk keeps its file and is
// rebuilt by itself when space returns. Needs root for mount; CI runs as root.
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type ProfilePaths, profilePaths } from "../src/profile/paths.js";
import { openReader, openStore, releaseStore, storeOptions } from "../src/store/registry.js";
import { Store } from "../src/store/store.js";
import { StoreReader } from "../src/store/store-reader.js";
import type { StoreEvent } from "../src/store/store-types.js";
import { requireBuild, tenax } from "./helpers/cli.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";
import { ballast, fillDisk, freeDisk, tinyDisk, until } from "./helpers/full-disk.js";
import { tempProfile } from "./helpers/tmp.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => requireBuild());

/**
 * A slice is 50 ms of work plus the batch that crosses it (60 to 150 ms on a loaded machine);
 * the catch-up below as one loop holds the event loop for over 2 s.
 */
const SLICE_BOUND_MS = 1000;

/** A tmpfs for this test, unmounted after it (after everything opened on it is closed). */
function disk(): string {
  const { dir, unmount } = tinyDisk();
  cleanups.unshift(unmount);
  return dir;
}

function fill(dir: string): string[] {
  const fillers = fillDisk(dir);
  cleanups.push(() => freeDisk(fillers));
  return fillers;
}

/** On a full disk, append messages of many distinct words until indexing one meets the full disk. */
async function appendUntilIndexPauses(store: Store, session: string): Promise<number> {
  let acked = 0;
  for (let i = 0; i < 400; i++) {
    const words = Array.from({ length: 60 }, (_, j) => `w${i}x${j}`).join(" ");
    await store.appendMessage({ session_id: session, role: "user", content: `bravo ${words}` });
    acked++;
    store.index.flush();
    if (store.health().search.status === "paused") return acked;
  }
  throw new Error("the index never met the full disk");
}

/** Twenty words of message n, most shared with a few other messages, as real text has. */
function words(n: number): string {
  return Array.from({ length: 20 }, (_, j) => `k${(n * 7 + j) % 5003}`).join(" ");
}

/** Hits through a reader of its own, which never writes or flushes anything. */
async function readerHits(paths: ProfilePaths, word: string, searchPath = paths.search): Promise<number> {
  const reader = new StoreReader({
    path: paths.state,
    searchPath,
    spoolDir: paths.spool,
    profile: paths.name,
  });
  try {
    return (await reader.search(word, { limit: 100_000 })).hits.length;
  } finally {
    reader.close();
  }
}

/** A writer whose state.db and search.db sit where the test says (two disks that fill apart). */
async function storeWithIndexAt(paths: ProfilePaths, searchPath: string): Promise<Store> {
  mkdirSync(paths.dir, { recursive: true });
  const store = await Store.open({ ...storeOptions(paths), searchPath, integrityCheckTimeoutMs: 0 });
  cleanups.push(() => store.close());
  return store;
}

describe("the full-text index on a full disk", () => {
  it("pauses indexing, keeps search.db whole and readable, and catches up by itself once space is freed", async () => {
    const mountPoint = disk();
    const home = join(mountPoint, "pause");
    mkdirSync(home);
    const paths = profilePaths(home, "default");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    cleanups.push(() => releaseStore(store));
    const events: StoreEvent[] = [];
    store.on((e) => events.push(e));
    const session = await store.createSession({ title: "before" });
    for (let i = 0; i < 20; i++)
      await store.appendMessage({ session_id: session, role: "user", content: `alpha ${i}` });
    store.index.flush();
    expect(await readerHits(paths, "alpha")).toBe(20);
    await ballast(store, paths.state);

    const fillers = fill(mountPoint);
    const acked = await appendUntilIndexPauses(store, session);
    expect(store.health().search.status).toBe("paused");
    expect(store.health().search.pending).toBeGreaterThan(0);
    expect(store.health().search.detail).toMatch(/disk holding .*search\.db is full/);
    expect(events.some((e) => e.type === "search.degraded")).toBe(true);

    // The index is not destroyed: same file, not empty, nothing moved aside, readers search it.
    expect(existsSync(paths.search)).toBe(true);
    expect(statSync(paths.search).size).toBeGreaterThan(0);
    expect(existsSync(`${paths.search}.damaged`)).toBe(false);
    expect(await readerHits(paths, "alpha")).toBe(20);
    // The CLI's readers work and name nothing wrong with state.db.
    const list = tenax(home, ["sessions", "list", "--json"]);
    expect(list.status).toBe(0);
    expect(JSON.parse(list.stdout).sessions).toHaveLength(1);
    const status = tenax(home, ["status", "--json"]);
    expect(status.stdout).not.toContain("no such table");
    expect(JSON.parse(status.stdout).components.store.status).not.toBe("down");

    // Space returns: the waiting messages are indexed without anyone asking.
    freeDisk(fillers);
    await until(() => store.health().search.status === "ok");
    await until(async () => (await readerHits(paths, "bravo")) === acked);
    expect(acked).toBeGreaterThan(0);
    expect(events.some((e) => e.type === "search.resumed")).toBe(true);
  });

  it("pauses the same way when state.db's disk is full as indexed entries are dropped, and everything queued reaches the index by itself", async () => {
    const stateDisk = disk();
    const indexDisk = disk();
    const paths = profilePaths(join(stateDisk, "home"), "default");
    const searchPath = join(indexDisk, "search.db");
    const store = await storeWithIndexAt(paths, searchPath);
    const events: { type: string; pending: number }[] = [];
    store.on((e) => events.push({ type: e.type, pending: store.health().search.pending }));
    const keep = await store.createSession({ title: "kept" });
    const gone = await store.createSession({ title: "deleted while paused" });
    for (let i = 0; i < 20; i++) {
      await store.appendMessage({ session_id: keep, role: "user", content: `alpha kept ${i}` });
      await store.appendMessage({ session_id: gone, role: "user", content: `alpha gone ${i}` });
    }
    store.index.flush();
    expect(await readerHits(paths, "alpha", searchPath)).toBe(40);

    // The index's disk fills: indexing pauses; state.db (on its own disk) takes more meanwhile,
    // a deletion too, which must leave the index as well.
    const indexFillers = fill(indexDisk);
    const acked = await appendUntilIndexPauses(store, keep);
    await store.deleteSession(gone);
    expect(store.health().search.pending).toBeGreaterThan(20);

    // Now state.db's disk fills (its WAL cut to nothing, so the next commit must grow it) and the
    // index's disk has room: the retry indexes, but cannot drop the entries it indexed.
    checkpoint(paths.state);
    const stateFillers = fill(stateDisk);
    freeDisk(indexFillers);
    await until(() => /disk holding .*state\.db is full/.test(store.health().search.detail ?? ""), 20_000);
    expect(store.health().search.status).toBe("paused");
    expect(store.health().search.pending).toBeGreaterThan(20);
    expect(events.filter((e) => e.type === "search.resumed")).toEqual([]);

    // Space returns on both: no write arrives, yet every queued entry reaches the index.
    freeDisk(stateFillers);
    await until(() => store.health().search.status === "ok" && store.health().search.pending === 0, 40_000);
    await until(() => events.some((e) => e.type === "search.resumed"));
    expect(events.filter((e) => e.type === "search.resumed").map((e) => e.pending)).toEqual([0]);
    expect(await readerHits(paths, "bravo", searchPath)).toBe(acked);
    expect(await readerHits(paths, "alpha", searchPath)).toBe(20);
    expect(store.index.index.count()).toBe(20 + acked);
  });

  it("catches up after a pause in slices, and says it resumed only once everything waiting is indexed", async () => {
    const indexDisk = disk();
    const paths = tempProfile();
    const searchPath = join(indexDisk, "search.db");
    const store = await storeWithIndexAt(paths, searchPath);
    const session = await store.createSession({ title: "many" });
    const fillers = fill(indexDisk);
    const acked = await appendUntilIndexPauses(store, session);
    const waiting = 30_000;
    for (let i = 0; i < waiting; i += 5000)
      await store.appendMessages(
        Array.from({ length: 5000 }, (_, j) => ({
          session_id: session,
          role: "user" as const,
          content: `charlie ${i + j} ${words(i + j)}`,
        })),
      );
    expect(store.health().search.pending).toBeGreaterThanOrEqual(waiting);

    // Watch the event loop while it catches up: how long it is held, and what health says between.
    const seen: { status: string; pending: number }[] = [];
    let last = performance.now();
    let longest = 0;
    const watch = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      const { status, pending } = store.health().search;
      seen.push({ status, pending });
    }, 2);
    cleanups.push(() => clearInterval(watch));
    let resumed: { pending: number } | null = null;
    store.on((e) => {
      if (e.type !== "search.resumed") return;
      longest = Math.max(longest, performance.now() - last);
      resumed = { pending: store.health().search.pending };
    });
    freeDisk(fillers);
    await until(() => resumed !== null, 40_000, 2);
    clearInterval(watch);
    console.log(
      `caught up on ${waiting + acked} entries; the loop was held at most ${longest.toFixed(0)} ms at a time`,
    );

    expect(resumed).toMatchObject({ pending: 0 });
    // Between slices the loop ran other work and health said ok with entries still waiting.
    expect(seen.filter((s) => s.status === "ok" && s.pending > 0).length).toBeGreaterThan(1);
    expect(longest).toBeLessThan(SLICE_BOUND_MS);
    expect(await readerHits(paths, "charlie", searchPath)).toBe(waiting);
  });

  it("a damaged index whose rebuild meets a full disk keeps its file, and is rebuilt in place by itself later", async () => {
    const mountPoint = disk();
    const home = join(mountPoint, "rebuild");
    mkdirSync(home);
    const paths = profilePaths(home, "default");
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    cleanups.push(() => releaseStore(store));
    const session = await store.createSession({ title: "damaged" });
    for (let i = 0; i < 200; i++)
      await store.appendMessage({
        session_id: session,
        role: "user",
        content: `charlie ${i} ${"z".repeat(200)}`,
      });
    store.index.flush();
    checkpoint(paths.search);
    const before = statSync(paths.search).size;
    // The index is damaged, and found so while the disk is full: its rebuild cannot be written.
    overwritePages(
      paths.search,
      btreePages(paths.search, "fts_data").map((p) => p.pageno),
      "garbage",
      5,
    );
    const fillers = fill(mountPoint);
    store.index.degrade(new Error("found damaged"));
    await until(
      () =>
        store.health().search.status === "degraded" &&
        /rebuilding .* failed/.test(store.health().search.detail ?? ""),
    );
    expect(store.health().search.detail).toMatch(
      /the disk is full; the index is kept as it was.*tried again/,
    );
    expect(statSync(paths.search).size).toBe(before);
    expect(existsSync(`${paths.search}.rebuild`)).toBe(false);
    // Readers are told search is degraded; they do not crash.
    const list = tenax(home, ["sessions", "list", "--json"]);
    expect(list.status).toBe(0);
    const reader = openReader(paths);
    try {
      await expect(reader.search("charlie")).rejects.toThrow(
        /search is (degraded|unavailable|being rebuilt)/,
      );
    } finally {
      reader.close();
    }

    freeDisk(fillers);
    await until(() => store.health().search.status === "ok", 40_000);
    expect(await readerHits(paths, "charlie")).toBe(200);
    // The damaged file was kept once for inspection, as it was found.
    expect(statSync(`${paths.search}.damaged`).size).toBe(before);
  });
});
