// The store's named leadership lock (the `platforms` lock: which gateway runs the chat platforms)
// on PostgreSQL, between real sessions and a real process: one holder at a time, the holder named
// to the others, a standby taking over within a second or two of the holder's release or kill -9
// (measured), a holder whose session the server ends told at once and not taking it back while
// another holds it; and on SQLite (one gateway per profile) always this process's.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { beforeAll, describe, expect, it } from "vitest";
import { PlatformsHolder } from "../src/gateway/platforms-holder.js";
import type { NamedLockState } from "../src/store/instance-types.js";
import { HELD_ADVISORY_KEYS } from "../src/store/postgres/pg-instance-lock.js";
import { namedLockKey } from "../src/store/postgres/pg-named-lock.js";
import type { PostgresStore } from "../src/store/postgres/postgres-store.js";
import { Store } from "../src/store/store.js";
import { requireBuild } from "./helpers/cli.js";
import { closeAfterEach } from "./helpers/opened.js";
import { pgClient, usePostgresCluster } from "./helpers/postgres.js";
import { openPostgresAt } from "./helpers/store-engines.js";
import { tempDir } from "./helpers/tmp.js";
import { until } from "./helpers/until.js";

beforeAll(() => requireBuild());
const cluster = usePostgresCluster();
const HOLDER = new URL("./fixtures/named-lock-holder.mjs", import.meta.url).pathname;

const opened = closeAfterEach();

async function openStore(url: string): Promise<PostgresStore> {
  const { store } = await openPostgresAt(url);
  return opened.add(store, (s) => s.shutdown().catch(() => undefined));
}

/** A contender in this process; `seen` records each state it was told of. */
function contender(store: PostgresStore, self: string, retryMs = 200) {
  const seen: NamedLockState[] = [];
  const lock = store.instances().namedLock("platforms", {
    self,
    retryMs,
    onChange: (l) => {
      if (seen.at(-1) !== l.state) seen.push(l.state);
    },
  });
  opened.add(lock, (l) => l.release());
  return { lock, seen };
}

async function sessionsHolding(url: string, key: string): Promise<number[]> {
  const c = await pgClient(opened, url);
  const { rows } = await c.query<{ pid: number }>(
    `SELECT pid FROM (${HELD_ADVISORY_KEYS}) h WHERE key = $1`,
    [key],
  );
  return rows.map((r) => r.pid);
}

describe("the named lock on PostgreSQL", () => {
  it("one holder at a time, named to the other, which takes over within a second of its release", async () => {
    const url = await cluster().createDatabase();
    const a = contender(await openStore(url), "inst:i_aaaa");
    const b = contender(await openStore(url), "inst:i_bbbb");
    await a.lock.start();
    await b.lock.start();
    expect(a.lock.state).toBe("held");
    expect(a.lock.holder).toBe("inst:i_aaaa");
    expect(b.lock.state).toBe("standby");
    expect(b.lock.holder).toBe("inst:i_aaaa");
    expect(b.lock.detail).toMatch(/the platforms lock is held by inst:i_aaaa \(backend \d+/);
    expect(await sessionsHolding(url, namedLockKey("platforms"))).toHaveLength(1);
    // Tried, not waited on: b keeps asking, and still does not have it after several tries.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(b.lock.state).toBe("standby");

    const released = Date.now();
    await a.lock.release();
    await until(() => b.lock.state === "held", 5_000, "b holds the lock after a let it go");
    const took = Date.now() - released;
    console.log(`named lock: the standby took it ${took} ms after the holder let it go (retry 200 ms)`);
    expect(took).toBeLessThan(2_000);
    expect(b.lock.holder).toBe("inst:i_bbbb");
    expect(b.seen).toEqual(["standby", "held"]);
    expect(a.lock.state).toBe("released");
  });

  it("a holder killed with -9 loses it at once: the standby takes it within seconds (measured)", async () => {
    const url = await cluster().createDatabase();
    const child = opened.child(
      spawn(process.execPath, [HOLDER, url, tempDir(), "platforms", "inst:i_child"], {
        stdio: ["ignore", "pipe", "inherit"],
      }),
    );
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the child did not take the lock in 20 s")), 20_000);
      lines.on("line", (line) => {
        if (line !== "held") return;
        clearTimeout(timer);
        resolve();
      });
      child.once("exit", (code) => reject(new Error(`the child exited (${code}) before it held the lock`)));
    });
    const b = contender(await openStore(url), "inst:i_standby", 1_000);
    await b.lock.start();
    expect(b.lock.state).toBe("standby");
    expect(b.lock.holder).toBe("inst:i_child");

    const killed = Date.now();
    child.kill("SIGKILL");
    await until(() => b.lock.state === "held", 10_000, "the standby holds the lock after the kill");
    const took = Date.now() - killed;
    console.log(`named lock: the standby took it ${took} ms after kill -9 of its holder (retry 1 s)`);
    expect(took).toBeLessThan(3_000);
  });

  it("a holder whose session the server ends is told at once, and does not take it back while another holds it", async () => {
    const url = await cluster().createDatabase();
    const a = contender(await openStore(url), "inst:i_aaaa");
    await a.lock.start();
    expect(a.lock.state).toBe("held");
    const [pid] = await sessionsHolding(url, namedLockKey("platforms"));
    // Someone else waits on the same key with a plain session: it wins the moment a's session ends.
    const other = await pgClient(opened, url, "tenax lock platforms inst:i_other");
    const waiting = other.query("SELECT pg_advisory_lock($1::bigint)", [namedLockKey("platforms")]);
    const admin = await pgClient(opened, url);
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    await waiting;
    await until(() => a.lock.state === "standby", 3_000, "a says it lost the lock");
    expect(a.seen).toEqual(["held", "standby"]);
    expect(a.lock.detail).toMatch(/connection broke|held by inst:i_other/);
    // a keeps trying and sees who holds it now, never holding it itself.
    await until(() => a.lock.holder === "inst:i_other", 3_000, "a names the new holder");
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(a.lock.state).toBe("standby");
    // Once the other lets go, a has it again.
    await other.query("SELECT pg_advisory_unlock($1::bigint)", [namedLockKey("platforms")]);
    await until(() => a.lock.state === "held", 3_000, "a holds the lock again");
    expect(a.seen).toEqual(["held", "standby", "held"]);
  });

  it("refuses a name that would not fit its holder's tag", async () => {
    const store = await openStore(await cluster().createDatabase());
    expect(() => store.instances().namedLock("Platforms!", { self: "inst:x", onChange: () => {} })).toThrow(
      /store: a lock name is 1-16 of a-z/,
    );
  });
});

describe("the gateway's platforms holder over the real lock", () => {
  it("starts the platforms when it wins, stops them at once when the lock's session ends, and starts them again only once it holds it again", async () => {
    const url = await cluster().createDatabase();
    const store = await openStore(url);
    const steps: string[] = [];
    const lines: string[] = [];
    const holder = new PlatformsHolder({
      lock: (name, options) => store.instances().namedLock(name, options),
      self: "inst:i_gateway",
      retryMs: 200,
      log: { info: (l) => lines.push(l), warn: (l) => lines.push(l) },
      term: {
        begin: async () => {
          steps.push("begin");
        },
        end: async () => {
          steps.push("end");
        },
      },
    });
    await holder.start();
    expect(steps).toEqual(["begin"]);
    expect(holder.holding()).toEqual({
      holder: true,
      held_by: "inst:i_gateway",
      self: "inst:i_gateway",
      detail: null,
    });
    // Another session queues for the key; the server ends ours (as a restart of the database would).
    const other = await pgClient(opened, url, "tenax lock platforms inst:i_other");
    const waiting = other.query("SELECT pg_advisory_lock($1::bigint)", [namedLockKey("platforms")]);
    const [pid] = await sessionsHolding(url, namedLockKey("platforms"));
    const admin = await pgClient(opened, url);
    const ended = Date.now();
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    await waiting;
    await until(() => steps.length === 2, 3_000, "the platforms stopped");
    console.log(`platforms holder: stopped ${Date.now() - ended} ms after its lock's session ended`);
    expect(steps).toEqual(["begin", "end"]);
    await until(() => holder.holding().held_by === "inst:i_other", 3_000, "the new holder named");
    expect(holder.holding()).toMatchObject({ holder: false, held_by: "inst:i_other" });
    expect(lines.join("\n")).toMatch(/lost their lock .*: stopped them at once/);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(steps).toEqual(["begin", "end"]);
    await other.query("SELECT pg_advisory_unlock($1::bigint)", [namedLockKey("platforms")]);
    await until(() => steps.length === 3, 3_000, "the platforms started again");
    expect(steps).toEqual(["begin", "end", "begin"]);
    await holder.stop();
    expect(steps).toEqual(["begin", "end", "begin", "end"]);
    expect(await sessionsHolding(url, namedLockKey("platforms"))).toEqual([]);
  });
});

describe("the named lock on SQLite", () => {
  it("is always this process's: held at the first try", async () => {
    const dir = tempDir();
    const store = await Store.open({
      path: `${dir}/state.db`,
      searchPath: `${dir}/search.db`,
      spoolDir: `${dir}/spool`,
      profile: "default",
      integrityCheckTimeoutMs: 0,
    });
    const seen: NamedLockState[] = [];
    const lock = store
      .instances()
      .namedLock("platforms", { self: "pid:1", onChange: (l) => seen.push(l.state) });
    expect(lock.state).toBe("trying");
    await lock.start();
    expect(lock.state).toBe("held");
    expect(lock.holder).toBe("pid:1");
    expect(seen).toEqual(["held"]);
    await lock.release();
    expect(lock.state).toBe("released");
    store.close();
  });
});
