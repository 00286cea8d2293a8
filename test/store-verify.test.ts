// The store's continuous verification against real files and real SQLite: damage to pages no write
// touches is found within one pass of the gateway's default settings while a writer keeps
// committing (the gateway's own wiring, on fake time; the checks are real); each kind of damage
// alone is found, whether random bytes or a well-formed page in the wrong place; damage in
// search.db stays search's; and a healthy store under steady writes, deletes and checkpoints is
// never called damaged.
import { setTimeout as realDelay } from "node:timers/promises";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { Scheduler } from "../src/agent/scheduler.js";
import { defaultConfig } from "../src/config/schema.js";
import { gatewayLog, startObservability } from "../src/gateway/observability.js";
import { probeLayers } from "../src/health/layer-probe.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { StoreCorruptError } from "../src/store/errors.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store, StoreEvent } from "../src/store/store.js";
import { StoreVerifier } from "../src/store/verifier.js";
import {
  btreePages,
  checkpoint,
  copyPage,
  freelistTrunk,
  overflowPages,
  overwritePages,
  swapChildren,
} from "./helpers/corrupt.js";
import { fakeTimers } from "./helpers/fake-time.js";
import { tempProfile } from "./helpers/tmp.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function openTracked(paths: ProfilePaths): Promise<Store> {
  const store = await openStore(paths);
  cleanup.push(() => releaseStore(store));
  return store;
}

/** Old sessions, as weeks of use leave them: short messages, and now and then a long one. */
async function oldSessions(store: Store, sessions: number): Promise<string[]> {
  const ids: string[] = [];
  for (let s = 0; s < sessions; s++) {
    const id = await store.createSession({ title: `old session ${s}` });
    ids.push(id);
    await store.appendMessages(
      Array.from({ length: 25 }, (_, m) => ({
        session_id: id,
        role: m % 2 === 0 ? "user" : "assistant",
        content: `session ${s} message ${m} ${"lorem ipsum ".repeat(m % 5 === 4 ? 1200 : 30)}`,
      })),
    );
  }
  store.index.flush();
  return ids;
}

const middleOf = <T>(list: readonly T[], at = 0.5): T => {
  const item = list[Math.floor(list.length * at)];
  if (item === undefined) throw new Error("no page to damage");
  return item;
};

function leaves(path: string, name: string): number[] {
  return btreePages(path, name)
    .filter((p) => p.pagetype === "leaf")
    .map((p) => p.pageno);
}

describe("the store's continuous verification", () => {
  it("finds four damaged pages no write touches within five minutes, on the gateway's defaults, while turns go on", async () => {
    const paths = tempProfile();
    const config = defaultConfig();
    const store = await openTracked(paths);
    await oldSessions(store, 40);
    checkpoint(paths.state);

    // Four pages of old sessions, which new turns never touch (new rows go to the right of each
    // b-tree), and which no read of the gateway's health probe meets as damage either.
    const table = leaves(paths.state, "messages");
    const byUid = leaves(paths.state, "sqlite_autoindex_messages_1");
    const bySeq = leaves(paths.state, "sqlite_autoindex_messages_2");
    const root = btreePages(paths.state, "messages").find((p) => p.pagetype === "internal")?.pageno;
    copyPage(paths.state, middleOf(table, 0.7), middleOf(table, 0.4)); // a data page: another leaf's bytes
    overwritePages(paths.state, [middleOf(bySeq, 0.4)], "garbage", 24); // an index page: random bytes
    copyPage(paths.state, middleOf(byUid, 0.6), middleOf(byUid, 0.3)); // an index page: its neighbour's
    swapChildren(paths.state, root as number); // the table's interior page: two child numbers swapped

    // The gateway's own wiring, its scheduler on fake time; every check and write is real.
    const time = fakeTimers(Date.now());
    const scheduler = new Scheduler({ now: time.now, timers: time.timers });
    const events: StoreEvent[] = [];
    cleanup.push(store.on((e) => events.push(e)));
    const log = gatewayLog(paths, config);
    const observed = startObservability({
      paths,
      config,
      store,
      scheduler,
      log,
      layers: () => probeLayers(paths, config, time.now()),
      gateway: () => ({
        stopping: false,
        turnsInFlight: 0,
        maxTurns: 4,
        startedAt: time.now(),
        address: null,
      }),
      now: time.now,
    });
    cleanup.push(
      () => observed.close(),
      () => scheduler.stop(),
      () => log.close(),
    );

    // A turn's worth of writes every fake second, until something reports the damage.
    const live = await store.createSession({ title: "live" });
    const damagedAt = time.now();
    let acknowledged = 0;
    while (store.health().corrupt === null && time.now() - damagedAt < 5 * 60_000) {
      time.advance(1000);
      try {
        await store.appendMessage({ session_id: live, role: "user", content: `turn ${acknowledged}` });
        acknowledged++;
      } catch (error) {
        // Refused only once the damage is reported (in the same moment as this write).
        expect(error).toBeInstanceOf(StoreCorruptError);
      }
      await realDelay(20);
    }
    expect(store.health().corrupt?.detail, "nothing reported the damage within five minutes").toMatch(
      /integrity check failed/,
    );
    expect(time.now() - damagedAt).toBeLessThanOrEqual(5 * 60_000);
    // Turns went on all the while, none of them meeting the damage: only the verifier found it.
    expect(acknowledged).toBeGreaterThan(20);
    expect(events.filter((e) => e.type === "store.corrupt")).toHaveLength(1);

    const health = await observed.routes.health();
    expect(health.status).toBe(503);
    expect(health.body.components.store).toMatchObject({
      status: "down",
      integrity: "corrupt",
      next: `tenax sessions recover --source ${paths.state} --inspect-only`,
    });
    await expect(
      store.appendMessage({ session_id: live, role: "user", content: "after" }),
    ).rejects.toBeInstanceOf(StoreCorruptError);
    expect(store.health().spooled_records).toBeGreaterThanOrEqual(1);
  }, 60_000);

  /** Damage of one kind, each found alone by one pass of the verifier's checks. */
  const KINDS: { name: string; damage: (path: string, freed: number) => void }[] = [
    {
      name: "a data page overwritten with random bytes",
      damage: (path) => overwritePages(path, [middleOf(leaves(path, "messages"))], "garbage", 31),
    },
    {
      name: "a data page zeroed (a write the disk lost)",
      damage: (path) => overwritePages(path, [middleOf(leaves(path, "messages"))], "zero", 32),
    },
    {
      name: "a data page holding another well-formed leaf of the same table",
      damage: (path) => {
        const table = leaves(path, "messages");
        copyPage(path, middleOf(table, 0.2), middleOf(table, 0.6));
      },
    },
    {
      name: "an interior page with two child numbers swapped (every byte plausible)",
      damage: (path) => {
        const interior = btreePages(path, "messages").filter((p) => p.pagetype === "internal");
        swapChildren(path, middleOf(interior).pageno);
      },
    },
    {
      name: "an index page overwritten with random bytes",
      damage: (path) =>
        overwritePages(path, [middleOf(leaves(path, "sqlite_autoindex_messages_2"))], "garbage", 33),
    },
    {
      // As many entries as before, so only comparing the index with its table shows it.
      name: "an index page holding its well-formed neighbour",
      damage: (path) => {
        const index = leaves(path, "sqlite_autoindex_messages_1");
        copyPage(path, middleOf(index, 0.6), middleOf(index, 0.3));
      },
    },
    {
      name: "a page of an old long message (an overflow page) overwritten with random bytes",
      damage: (path) => overwritePages(path, [middleOf(overflowPages(path, "messages"))], "garbage", 34),
    },
    {
      name: "the freelist's trunk page overwritten with random bytes (a page no table uses)",
      damage: (path, freed) => overwritePages(path, [freed], "garbage", 35),
    },
  ];

  for (const kind of KINDS) {
    it(`finds ${kind.name}`, async () => {
      const paths = tempProfile();
      const store = await openTracked(paths);
      const sessions = await oldSessions(store, 30);
      // Two sessions deleted: their pages go to the freelist, whose trunk no table reaches.
      for (const id of sessions.slice(3, 5)) await store.deleteSession(id);
      checkpoint(paths.state);
      const trunk = freelistTrunk(paths.state);
      expect(trunk).toBeGreaterThan(1);
      const verifier = new StoreVerifier({
        target: store,
        everyMs: 0,
        cpuShare: 1,
        now: Date.now,
        wakeAt: () => ({ cancel: () => {} }),
      });
      expect(await verifier.once()).toMatchObject({ state: "ok", search: "ok" });

      kind.damage(paths.state, trunk);
      const pass = await verifier.once();
      expect(pass.state).toBe("corrupt");
      expect(verifier.health().found?.detail.join("\n")).not.toBe("");
      expect(store.health().corrupt?.detail).toMatch(/integrity check failed/);
      await expect(store.createSession({ title: "after" })).rejects.toBeInstanceOf(StoreCorruptError);
    });
  }

  it("keeps damage in search.db to search: the index is rebuilt, the store keeps taking writes", async () => {
    const paths = tempProfile();
    const store = await openTracked(paths);
    const [session] = await oldSessions(store, 20);
    checkpoint(paths.search);
    const verifier = new StoreVerifier({
      target: store,
      everyMs: 0,
      cpuShare: 1,
      now: Date.now,
      wakeAt: () => ({ cancel: () => {} }),
    });
    overwritePages(paths.search, [middleOf(leaves(paths.search, "fts_data"))], "garbage", 41);
    const pass = await verifier.once();
    expect(pass).toMatchObject({ state: "ok", search: "corrupt" });
    expect(store.health().corrupt).toBeNull();
    await store.appendMessage({ session_id: session as string, role: "user", content: "still written" });
    await expect.poll(() => store.health().search.status, { timeout: 20_000 }).toBe("ok");
    expect(await verifier.once()).toMatchObject({ state: "ok", search: "ok" });
  });

  it("never calls a healthy store damaged under steady writes, deletes and checkpoints", async () => {
    const paths = tempProfile();
    const store = await openTracked(paths);
    const old = await oldSessions(store, 10);
    const verifier = new StoreVerifier({
      target: store,
      everyMs: 0,
      cpuShare: 1,
      now: Date.now,
      wakeAt: () => ({ cancel: () => {} }),
    });
    // A second connection checkpoints all the while, in every mode: pages move from the WAL into
    // the file under the checks, and the WAL restarts from its beginning.
    const checkpointer = new Database(paths.state, { timeout: 20 });
    cleanup.push(() => {
      checkpointer.close();
    });
    const modes = ["PASSIVE", "FULL", "RESTART", "TRUNCATE"];
    let checkpoints = 0;
    let stopped = false;
    let writes = 0;
    const writer = (async () => {
      let session = await store.createSession({ title: "busy" });
      while (!stopped) {
        const long = writes % 7 === 0;
        await store.appendMessage({
          session_id: session,
          role: "user",
          content: `write ${writes} ${"dolor sit amet ".repeat(long ? 500 : 20)}`,
        });
        if (writes % 25 === 24) {
          // Freed pages go to the freelist and come back into use.
          await store.deleteSession(session);
          session = await store.createSession({ title: `busy ${writes}` });
        }
        if (writes % 10 === 0) await store.putRecord("note", `n${writes % 30}`, { writes });
        writes++;
        try {
          checkpointer.pragma(`wal_checkpoint(${modes[checkpoints % modes.length]})`);
          checkpoints++;
        } catch {
          // Busy now and then (the writer or a check holds the WAL): the next one runs.
        }
      }
    })();
    const passes: string[] = [];
    for (let i = 0; i < 30; i++) {
      const pass = await verifier.once();
      passes.push(`${pass.state}/${pass.search}`);
    }
    stopped = true;
    await writer;
    expect(passes).toEqual(Array.from({ length: 30 }, () => "ok/ok"));
    expect(store.health().corrupt).toBeNull();
    expect(writes).toBeGreaterThan(100);
    expect(checkpoints).toBeGreaterThan(50);
    expect(await store.getMessages(old[0] as string)).toHaveLength(25);
  }, 60_000);
});
