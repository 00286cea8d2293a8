import { existsSync, statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { checkpoint, garbageAfterHeader } from "../../test/helpers/corrupt.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { SearchUnavailableError } from "./errors.js";
import { openReader, openStore, releaseStore, storeOptions } from "./registry.js";
import { Store, type StoreEvent } from "./store.js";

async function filledStore(
  paths: ReturnType<typeof tempProfile>,
): Promise<{ store: Store; session: string }> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  await store.index.rebuild();
  const session = await store.createSession({ title: "zebra notes" });
  for (let i = 0; i < 300; i++) {
    await store.appendMessage({
      session_id: session,
      role: "user",
      content: `note ${i} about the zebra ${"pad ".repeat(50)}`,
    });
  }
  store.index.flush();
  return { store, session };
}

function nextEvent(store: Store, type: StoreEvent["type"]): Promise<StoreEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${type} event within 10 s`)), 10_000);
    const off = store.on((e) => {
      if (e.type === type) {
        clearTimeout(timer);
        off();
        resolve(e);
      }
    });
  });
}

describe("a damaged full-text index", () => {
  it("degrades search with a clear message while list and show keep working, and reindex repairs it", async () => {
    const paths = tempProfile();
    const { store, session } = await filledStore(paths);
    expect((await store.search("zebra", { limit: 500 })).hits).toHaveLength(300);
    await releaseStore(store);

    garbageAfterHeader(paths.search, 7);

    const reader = openReader(paths);
    expect((await reader.listSessions()).map((s) => s.id)).toEqual([session]);
    expect(await reader.getMessages(session)).toHaveLength(300);
    let error: unknown;
    try {
      await reader.search("zebra");
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SearchUnavailableError);
    expect((error as SearchUnavailableError).message).toMatch(
      /search is (degraded|unavailable).*transcripts are not affected/,
    );
    expect((error as SearchUnavailableError).hint).toBe("rebuild it with: tenax sessions reindex");
    reader.close();

    // The next writer notices on open and rebuilds by itself, from the transcript.
    const writer = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const rebuilt = writer.health().search.status === "ok" ? null : await nextEvent(writer, "search.rebuilt");
    expect(rebuilt).toMatchObject({ type: "search.rebuilt", messages: 300 });
    expect((await writer.search("zebra", { limit: 500 })).hits).toHaveLength(300);
    expect(await writer.getMessages(session)).toHaveLength(300);
    await releaseStore(writer);
  });

  it("rebuilds in the background when the index fails under a running writer", async () => {
    const paths = tempProfile();
    const { store } = await filledStore(paths);
    checkpoint(paths.search); // so that the damage is not shadowed by newer copies in the WAL
    garbageAfterHeader(paths.search, 11);
    const degraded = nextEvent(store, "search.degraded");
    const rebuilt = nextEvent(store, "search.rebuilt");
    // What a reader sees while the index is degraded, taken as it is reported (the rebuild may
    // finish a few turns of the event loop later, before this test looks again).
    const during: { seen?: { status: string; search: string } } = {};
    const off = store.on(async (event) => {
      if (event.type !== "search.degraded" || during.seen) return;
      let search = "answered";
      try {
        await store.search("zebra");
      } catch (e) {
        search = (e as Error).message;
      }
      during.seen = { status: store.health().search.status, search };
    });
    // The stale page cache may still answer this search; the write after it must hit the damage.
    try {
      await store.search("zebra");
    } catch (e) {
      expect(e).toBeInstanceOf(SearchUnavailableError);
    }
    await store.appendMessage({
      session_id: (await store.listSessions())[0]?.id ?? "",
      role: "user",
      content: "zebra again",
    });
    store.index.flush();
    await degraded;
    off();
    expect(during.seen?.status).toBeDefined();
    expect(during.seen?.status).not.toBe("ok");
    expect(during.seen?.search).toMatch(/being rebuilt|degraded/);
    await rebuilt;
    expect((await store.search("zebra", { limit: 500 })).hits).toHaveLength(301);
    expect(store.health()).toMatchObject({ writable: true, corrupt: null, search: { status: "ok" } });
    await releaseStore(store);
  });
});

describe("an index rebuilt by another process", () => {
  it("is followed by every writer, so nothing is indexed into the replaced file", async () => {
    const paths = tempProfile();
    // Two writers on one store, as two processes would have (the registry keeps one per process).
    const options = { ...storeOptions(paths), integrityCheckTimeoutMs: 0 };
    const a = await Store.open(options);
    await a.index.rebuild();
    const b = await Store.open(options);
    await b.index.rebuild();
    const session = await a.createSession();
    await a.index.rebuild("replace the file under b");
    await b.appendMessage({ session_id: session, role: "user", content: "numbat sighting" });
    // Indexed now, or already by the flush its write scheduled (a loaded machine's sync can take
    // longer than that delay): either way into the file a reads, and nothing is left queued.
    b.index.flush();
    expect(b.index.health().pending).toBe(0);
    expect((await a.search("numbat")).hits.map((h) => h.message.content)).toEqual(["numbat sighting"]);
    a.close();
    b.close();
  });
});

describe("a rebuild while another store on the same files writes", () => {
  it("keeps one index for both: every message written meanwhile is found, none deleted meanwhile is left", async () => {
    const paths = tempProfile();
    // Two writers on one store, as two processes would have (the registry keeps one per process).
    const options = { ...storeOptions(paths), integrityCheckTimeoutMs: 0, synchronous: "normal" as const };
    const a = await Store.open(options);
    const b = await Store.open(options);
    // Enough messages that the rebuild takes several chunks, with b's writes between them.
    const early: string[] = [];
    for (let s = 0; s < 4; s++) {
      const id = await a.createSession({ title: `early ${s}` });
      early.push(id);
      await a.appendMessages(
        Array.from({ length: 5000 }, (_, i) => ({
          session_id: id,
          role: "user" as const,
          content: `wombat ${s} ${i}`,
        })),
      );
    }
    a.index.flush();
    const inode = statSync(paths.search).ino;

    let done = false;
    const rebuilt = a.index.rebuild("requested while b writes").then((r) => {
      done = true;
      return r;
    });
    // The rebuild read its first chunk at once: the first session's messages are behind it when b
    // deletes them, and b's new messages come after it.
    await b.deleteSession(early[0] ?? "");
    const late = await b.createSession({ title: "late" });
    let written = 0;
    let during = 0;
    const seenDuring: string[] = [];
    // b keeps writing until the rebuild is done, which it must be while writes go on.
    const stopWriting = Date.now() + 20_000;
    while (!done && Date.now() < stopWriting) {
      await b.appendMessage({ session_id: late, role: "user", content: `wombat late ${written}` });
      written++;
      b.index.flush();
      if (done) break;
      during++;
      if (seenDuring.length === 0) {
        // Neither b nor a reader crashes, or answers from a half-filled index: they say why.
        for (const search of [() => b.search("wombat"), () => withReader(paths, (r) => r.search("wombat"))]) {
          try {
            await search();
            seenDuring.push("answered");
          } catch (e) {
            seenDuring.push((e as Error).message);
          }
        }
      }
    }
    const endedWhileWriting = done;
    await rebuilt;
    a.index.flush();
    b.index.flush();

    const live = 15_000 + written;
    expect((await a.search("wombat", { limit: live + 100 })).hits).toHaveLength(live);
    expect((await b.search("wombat", { limit: live + 100 })).hits).toHaveLength(live);
    expect(
      await withReader(paths, async (r) => (await r.search("wombat", { limit: live + 100 })).hits.length),
    ).toBe(live);
    // Nothing deleted is left behind in the index, and it is still the same file, nothing set aside.
    expect(a.index.index.count()).toBe(live);
    expect(statSync(paths.search).ino).toBe(inode);
    expect(existsSync(`${paths.search}.damaged`)).toBe(false);
    expect(during).toBeGreaterThan(0);
    expect(seenDuring).toHaveLength(2);
    expect(endedWhileWriting).toBe(true);
    for (const seen of seenDuring)
      expect(seen).toMatch(/search is being rebuilt.*transcripts are not affected/);
    a.close();
    b.close();
  });
});

async function withReader<T>(
  paths: ReturnType<typeof tempProfile>,
  use: (reader: ReturnType<typeof openReader>) => Promise<T>,
): Promise<T> {
  const reader = openReader(paths);
  try {
    return await use(reader);
  } finally {
    reader.close();
  }
}
