// A full disk never destroys the full-text index, for real: the profile lives on a tiny tmpfs.
// When the disk fills, indexing pauses and search.db is kept whole (no empty file, nothing moved
// aside), readers and the CLI keep working, and once space is freed what was acknowledged in the
// meantime is indexed by itself. A damaged index whose rebuild meets a full disk keeps the old
// file and is rebuilt by itself when space returns. Needs root for mount; CI runs as root.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { profilePaths } from "../src/profile/paths.js";
import { openReader, openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import type { StoreEvent } from "../src/store/store-types.js";
import { requireBuild, tenax } from "./helpers/cli.js";
import { btreePages, checkpoint, overwritePages } from "./helpers/corrupt.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => requireBuild());

/** A tmpfs of its own for one test, unmounted after it. */
function tinyDisk(): string {
  const mountPoint = mkdtempSync(join(tmpdir(), "tenax-tmpfs-"));
  execFileSync("mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", mountPoint]);
  cleanups.unshift(() => {
    execFileSync("umount", [mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });
  return mountPoint;
}

/**
 * Grow state.db's WAL and free list with a ballast session, then delete it: on a full disk the
 * store can go on committing into space it already holds, while the index, which holds none
 * spare, cannot grow.
 */
async function ballast(store: Store, state: string): Promise<void> {
  const id = await store.createSession({ title: "ballast" });
  for (let i = 0; i < 8; i++)
    await store.appendMessage({ session_id: id, role: "user", content: "b".repeat(100_000) });
  passiveCheckpoint(state);
  await store.deleteSession(id);
  passiveCheckpoint(state);
}

/** Copy the WAL into the main file, keeping the WAL file's size (its space is reused). */
function passiveCheckpoint(path: string): void {
  const db = new Database(path);
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } finally {
    db.close();
  }
}

/** Fill what is left of the disk; returns the filler files to delete to free it again. */
function fillDisk(dir: string): string[] {
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

async function until(what: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
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

function searchHits(paths: ReturnType<typeof profilePaths>, word: string): number {
  const reader = openReader(paths);
  try {
    return reader.search(word, { limit: 10_000 }).hits.length;
  } finally {
    reader.close();
  }
}

describe("the full-text index on a full disk", () => {
  it("pauses indexing, keeps search.db whole and readable, and catches up by itself once space is freed", async () => {
    const mountPoint = tinyDisk();
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
    expect(searchHits(paths, "alpha")).toBe(20);
    await ballast(store, paths.state);

    const fillers = fillDisk(mountPoint);
    cleanups.push(() => {
      for (const f of fillers) rmSync(f, { force: true });
    });
    const acked = await appendUntilIndexPauses(store, session);
    expect(store.health().search.status).toBe("paused");
    expect(store.health().search.pending).toBeGreaterThan(0);
    expect(store.health().search.detail).toMatch(/disk holding .*search\.db is full/);
    expect(events.some((e) => e.type === "search.degraded")).toBe(true);

    // The index is not destroyed: same file, not empty, nothing moved aside, readers search it.
    expect(existsSync(paths.search)).toBe(true);
    expect(statSync(paths.search).size).toBeGreaterThan(0);
    expect(existsSync(`${paths.search}.damaged`)).toBe(false);
    expect(searchHits(paths, "alpha")).toBe(20);
    // The CLI's readers work and name nothing wrong with state.db.
    const list = tenax(home, ["sessions", "list", "--json"]);
    expect(list.status).toBe(0);
    expect(JSON.parse(list.stdout).sessions).toHaveLength(1);
    const status = tenax(home, ["status", "--json"]);
    expect(status.stdout).not.toContain("no such table");
    expect(JSON.parse(status.stdout).components.store.status).not.toBe("down");

    // Space returns: the waiting messages are indexed without anyone asking.
    for (const f of fillers) rmSync(f, { force: true });
    await until(() => store.health().search.status === "ok");
    await until(() => searchHits(paths, "bravo") === acked);
    expect(acked).toBeGreaterThan(0);
    expect(events.some((e) => e.type === "search.resumed")).toBe(true);
  });

  it("a damaged index whose rebuild meets a full disk keeps the old file, and is rebuilt by itself later", async () => {
    const mountPoint = tinyDisk();
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
    const fillers = fillDisk(mountPoint);
    cleanups.push(() => {
      for (const f of fillers) rmSync(f, { force: true });
    });
    store.index.degrade(new Error("found damaged"));
    await until(
      () =>
        store.health().search.status === "degraded" &&
        /rebuilding .* failed/.test(store.health().search.detail ?? ""),
    );
    expect(store.health().search.detail).toMatch(/disk is full; the old index is kept/);
    expect(statSync(paths.search).size).toBe(before);
    expect(existsSync(`${paths.search}.rebuild`)).toBe(false);
    // Readers are told search is degraded; they do not crash.
    const list = tenax(home, ["sessions", "list", "--json"]);
    expect(list.status).toBe(0);

    for (const f of fillers) rmSync(f, { force: true });
    await until(() => store.health().search.status === "ok", 40_000);
    expect(searchHits(paths, "charlie")).toBe(200);
    expect(existsSync(`${paths.search}.damaged`)).toBe(true);
  });
});
