import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { btreePages, checkpoint, fileDigest, overwritePages } from "../../test/helpers/corrupt.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { StoreCorruptError } from "./errors.js";
import { openStore, releaseStore } from "./registry.js";
import { readSpool } from "./spool.js";
import type { StoreEvent } from "./store.js";

const SEED = Number(process.env.TENAX_SEED ?? 20261129);

describe("a store damaged under a running writer", () => {
  it("fails fast and sticky on the next write, spools it, and closes without a checkpoint", async () => {
    console.log(`corruption test seed=${SEED}`);
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const events: StoreEvent[] = [];
    store.on((e) => events.push(e));
    const sessions: string[] = [];
    for (let s = 0; s < 3; s++) {
      const id = await store.createSession({ title: `s${s}` });
      sessions.push(id);
      for (let i = 0; i < 100; i++) {
        await store.appendMessage({
          session_id: id,
          role: "user",
          content: `message ${i} ${"x".repeat(300)}`,
        });
      }
    }
    checkpoint(paths.state);
    // Garbage over every interior and leaf page of the messages table: any append must read one.
    const pages = btreePages(paths.state, "messages").map((p) => p.pageno);
    expect(pages.length).toBeGreaterThan(5);
    overwritePages(paths.state, pages, "garbage", SEED);

    const first = store.appendMessage({
      session_id: sessions[0] ?? "",
      role: "user",
      content: "after damage 1",
    });
    await expect(first).rejects.toBeInstanceOf(StoreCorruptError);
    const error = (await first.catch((e: unknown) => e)) as StoreCorruptError;
    expect(error.message).toMatch(/is damaged/);
    expect(error.spooledTo).not.toBeNull();
    expect(error.hint).toContain(`sessions recover --source ${paths.state} --inspect-only`);
    expect(store.health()).toMatchObject({ writable: false, corrupt: { detail: expect.any(String) } });
    expect(events.some((e) => e.type === "store.corrupt")).toBe(true);

    // Sticky: the next write does not touch SQLite at all and still lands in the spool.
    const started = performance.now();
    await expect(
      store.appendMessage({ session_id: sessions[1] ?? "", role: "user", content: "after damage 2" }),
    ).rejects.toBeInstanceOf(StoreCorruptError);
    expect(performance.now() - started).toBeLessThan(1000);

    const dbBefore = fileDigest(paths.state);
    const walBefore = fileDigest(`${paths.state}-wal`);
    await releaseStore(store);
    expect(fileDigest(paths.state)).toBe(dbBefore);
    expect(fileDigest(`${paths.state}-wal`)).toBe(walBefore);
    expect(existsSync(`${paths.state}-wal`)).toBe(true);

    const spool = readSpool(paths.spool);
    const contents = spool.records
      .flatMap((r) => r.ops)
      .map((op) => (op.op === "message.append" ? op.content : op.op));
    expect(contents).toEqual(["after damage 1", "after damage 2"]);
    expect(spool.records.every((r) => r.reason === "corrupt" && r.profile === "default")).toBe(true);
  });
});

describe("a read that meets damage in the writing process", () => {
  it("raises the typed error with the salvage command and stops the writer at once", async () => {
    const paths = tempProfile();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    for (let i = 0; i < 40; i++) await store.createSession({ title: `session ${i} ${"t".repeat(200)}` });
    await releaseStore(store);
    checkpoint(paths.state);
    overwritePages(
      paths.state,
      btreePages(paths.state, "sessions").map((p) => p.pageno),
      "garbage",
      SEED,
    );
    // The open check is off, as when it ran out of budget: the first read finds the damage.
    const writer = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    await expect(writer.listSessions()).rejects.toThrow(StoreCorruptError);
    const error = await (async () => {
      try {
        await writer.listSessions();
      } catch (e) {
        return e as StoreCorruptError;
      }
    })();
    expect(error?.hint).toBe(
      `see what can be salvaged: tenax sessions recover --source ${paths.state} --inspect-only`,
    );
    expect(writer.health().writable).toBe(false);
    await expect(writer.createSession({ title: "after" })).rejects.toMatchObject({
      name: "StoreCorruptError",
      spooledTo: expect.stringContaining(paths.spool),
    });
    await releaseStore(writer);
  });
});
