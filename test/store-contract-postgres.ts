// The part of the store contract only a database server shared by processes can show: concurrent
// writers and claims, concurrent openings of a new database, a newer or foreign store refused, and
// an outage (the server stopped mid-use, then started again). Run by store-contract.test.ts.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { seededRandom } from "../src/core/deps.js";
import { TenaxError } from "../src/core/errors.js";
import type { WriteOp } from "../src/store/ops.js";
import { openPostgresStore } from "../src/store/postgres/open-postgres.js";
import { PG_SCHEMA_VERSION } from "../src/store/postgres/pg-schema.js";
import type { StoreEvent } from "../src/store/store-types.js";
import type { PgCluster } from "./helpers/postgres.js";
import { openPostgresAt } from "./helpers/store-engines.js";
import { startTcpProxy } from "./helpers/tcp-proxy.js";
import { rejected } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";
import { until } from "./helpers/until.js";

const SEED = Number(process.env.TENAX_TEST_SEED ?? Date.now() % 1_000_000);

const put = (key: string, value: string, at: number): WriteOp => ({
  op: "record.put",
  kind: "note",
  key,
  session_id: null,
  value: JSON.stringify(value),
  updated_at: at,
});

async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export function postgresOnly(cluster: () => PgCluster): void {
  describe("store contract: postgres only", () => {
    it("numbers 400 messages from 8 concurrent writers on two pools 1..400, no gap, no duplicate", async () => {
      console.log(`store-contract-postgres seed ${SEED} (set TENAX_TEST_SEED to repeat)`);
      const random = seededRandom(SEED);
      const url = await cluster().createDatabase();
      const a = (await openPostgresAt(url)).store;
      const b = (await openPostgresAt(url)).store;
      const sid = await a.createSession();
      const writer = async (w: number) => {
        const store = w % 2 === 0 ? a : b;
        for (let i = 0; i < 50; i++) {
          // Some writes carry two messages, and a few are sent twice (a retry): uids keep them once.
          const uid = `w${w}_${i}`;
          await store.appendMessage({ session_id: sid, role: "user", content: uid, uid });
          if (random() < 0.1) await store.appendMessage({ session_id: sid, role: "user", content: uid, uid });
        }
      };
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(writer));
      const messages = await a.getMessages(sid);
      expect(messages.map((m) => m.seq)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
      expect(new Set(messages.map((m) => m.uid)).size).toBe(400);
    });

    it("never deadlocks writes to the same sessions in opposite orders", async () => {
      const url = await cluster().createDatabase();
      const a = (await openPostgresAt(url)).store;
      const b = (await openPostgresAt(url)).store;
      const [x, y] = [await a.createSession(), await a.createSession()];
      const writer = async (store: typeof a, first: string, second: string, tag: string) => {
        for (let i = 0; i < 15; i++) {
          await store.appendMessages([
            { session_id: first, role: "user", content: `${tag}${i}` },
            { session_id: second, role: "user", content: `${tag}${i}` },
          ]);
        }
      };
      await Promise.all([
        writer(a, x, y, "a"),
        writer(b, y, x, "b"),
        writer(a, y, x, "c"),
        writer(b, x, y, "d"),
      ]);
      for (const sid of [x, y]) {
        expect((await a.getMessages(sid)).map((m) => m.seq)).toEqual(
          Array.from({ length: 60 }, (_, i) => i + 1),
        );
      }
    });

    it("runs again the transactions PostgreSQL picks as deadlock victims", async () => {
      const url = await cluster().createDatabase();
      const a = (await openPostgresAt(url)).store;
      const b = (await openPostgresAt(url)).store;
      const events: StoreEvent[] = [];
      a.on((e) => events.push(e));
      b.on((e) => events.push(e));
      // Records are written in the order of the write's ops: opposite orders can deadlock.
      const writer = async (store: typeof a, keys: string[], tag: string) => {
        for (let i = 0; i < 20; i++) await store.write(keys.map((k) => put(k, `${tag}${i}`, i)));
      };
      await Promise.all([writer(a, ["r1", "r2"], "a"), writer(b, ["r2", "r1"], "b")]);
      expect((await a.listRecords("note")).map((r) => r.key).sort()).toEqual(["r1", "r2"]);
      const retried = events.filter((e) => e.type === "store.busy_retry").length;
      console.log(`deadlock test: ${retried} transaction(s) run again after a deadlock`);
    });

    it("lets exactly one of 8 concurrent claims of a record win", async () => {
      const url = await cluster().createDatabase();
      const stores = [(await openPostgresAt(url)).store, (await openPostgresAt(url)).store];
      const claims = Array.from({ length: 8 }, (_, i) =>
        stores[i % 2]?.write([
          {
            op: "record.claim",
            kind: "cron",
            key: "tick",
            session_id: null,
            value: `"${i}"`,
            expect: null,
            updated_at: i,
          },
        ]),
      );
      const outcomes = await Promise.allSettled(claims);
      const won = outcomes.filter((o) => o.status === "fulfilled");
      const lost = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason] : []));
      expect(won).toHaveLength(1);
      expect(lost.map((e) => (TenaxError.isInstance(e) ? e.code : String(e)))).toEqual(
        Array(7).fill("record_conflict"),
      );
    });

    it("migrates a new database once when many processes open it at once", async () => {
      const url = await cluster().createDatabase();
      const spoolDir = tempDir();
      const opened = await Promise.all(
        Array.from({ length: 6 }, () => openPostgresStore({ url, profile: "default", spoolDir })),
      );
      try {
        expect(new Set(opened.map((s) => s.storeId)).size).toBe(1);
        expect(opened[0]?.storeId).toMatch(/^store_/);
        expect((await opened[0]?.stats())?.schema_version).toBe(PG_SCHEMA_VERSION);
      } finally {
        await Promise.all(opened.map((s) => s.shutdown()));
      }
    });

    it("refuses a newer schema, another profile's store and another program's tables; never prints the password", async () => {
      const url = await cluster().createDatabase();
      const withPassword = url.replace("tenax@", "tenax:s3cret-pass@");
      const { store } = await openPostgresAt(withPassword);
      expect(store.where).not.toContain("s3cret");
      expect(store.health().path).toBe(store.where);
      const wrong = await rejected(() => openPostgresAt(url, { profile: "work" }));
      expect(wrong.code).toBe("store_wrong_profile");
      expect(wrong.hint).toBeTruthy();
      await sql(url, "UPDATE tenax_meta SET value = '99' WHERE key = 'schema_version'");
      const tooNew = await rejected(() => openPostgresAt(url));
      expect(tooNew.code).toBe("store_too_new");
      expect(tooNew.hint).toContain("upgrade Tenax");
      const foreign = await cluster().createDatabase();
      await sql(foreign, "CREATE TABLE invoices (id int)");
      expect((await rejected(() => openPostgresAt(foreign))).code).toBe("store_foreign");
      const drift = Math.abs((await store.databaseNow()) - Date.now());
      expect(drift).toBeLessThan(5_000);
    });

    it("says a write whose commit reply was lost may or may not be stored, and spools it", async () => {
      const { store, spoolDir } = await openPostgresAt(await cluster().createDatabase());
      const sid = await store.createSession();
      const original = pg.Client.prototype.query;
      let lose = true;
      // The COMMIT reaches the server and commits; its reply is "lost" on the way back.
      const spy = vi.spyOn(pg.Client.prototype, "query").mockImplementation(function (
        this: pg.Client,
        ...args: unknown[]
      ) {
        const result: unknown = Reflect.apply(original, this, args);
        if (!lose || args[0] !== "COMMIT") return result;
        lose = false;
        return (result as Promise<unknown>).then(() => {
          throw new Error("Connection terminated unexpectedly");
        });
      } as unknown as typeof original);
      const op = store.messageOp({ session_id: sid, role: "user", content: "maybe", uid: "u_maybe" });
      try {
        const unknown = await rejected(() => store.write([op]));
        expect(unknown.code).toBe("store_commit_unknown");
        expect(unknown.message).toContain("may or may not be stored; safe to retry");
      } finally {
        spy.mockRestore();
      }
      expect(readdirSync(spoolDir)).toHaveLength(1);
      const [again] = await store.write([op]);
      expect(again?.message).toMatchObject({ seq: 1, duplicate: true });
      expect(store.health().unavailable).toBeNull();
    });

    it("refuses and spools writes while the database is down, and takes them again once it is back", async () => {
      const db = cluster();
      const url = await db.createDatabase();
      const { store, spoolDir } = await openPostgresAt(url);
      const events: StoreEvent[] = [];
      store.on((e) => events.push(e));
      const sid = await store.createSession();
      await store.appendMessage({ session_id: sid, role: "user", content: "before" });
      const fp = "aaaaaaaaaaaa";
      await store.credentials().record("p", fp, { status: "disabled", reason: "revoked", now: 1_000 });
      expect(await store.credentials().get("p")).toHaveLength(1);
      const lost: WriteOp = store.messageOp({
        session_id: sid,
        role: "user",
        content: "during",
        uid: "u_during",
      });
      await db.stop();
      try {
        const refused = await rejected(() => store.write([lost]));
        expect(refused.code).toBe("store_unavailable");
        expect(refused.message).toContain(store.where);
        expect(refused.hint).toContain("start PostgreSQL");
        const spooled = readdirSync(spoolDir).map((f) => readFileSync(join(spoolDir, f), "utf8"));
        expect(spooled.join("")).toContain('"uid":"u_during"');
        expect(store.health()).toMatchObject({ writable: false, spooled_records: 1 });
        expect(store.health().unavailable?.detail).toBeTruthy();
        expect((await rejected(() => store.getMessages(sid))).code).toBe("store_unavailable");
        expect(events.map((e) => e.type)).toContain("store.unavailable");
        // The key ledger goes on in this process's memory, from the states last read.
        const ledger = store.credentials();
        expect(await ledger.usable("p", [fp], 1_000)).toEqual([]);
        await ledger.record("p", "bbbbbbbbbbbb", { status: "disabled", reason: "revoked", now: 2_000 });
        expect(await ledger.usable("p", [fp, "bbbbbbbbbbbb"], 1_000)).toEqual([]);
        expect(store.health().credentials_local).toBe(true);
      } finally {
        await db.start();
      }
      // Nothing written yet: the background ping notices the database is back.
      await until(() => store.health().unavailable === null, 10_000, "the store healed", 50);
      expect(events.map((e) => e.type)).toContain("store.available");
      const after = await store.appendMessage({ session_id: sid, role: "user", content: "after" });
      expect(after.seq).toBe(2);
      expect(store.health().unavailable).toBeNull();
      expect(events.map((e) => e.type)).toContain("store.available");
      expect(await store.credentials().get("p")).toMatchObject([{ fingerprint: fp, status: "disabled" }]);
      expect(store.health().credentials_local).toBe(false);
      expect(
        await store.replay([
          { v: 1, spooled_at: 0, profile: "default", store: url, reason: "x", ops: [lost] },
        ]),
      ).toEqual({
        ops: 1,
        messages: 1,
        duplicates: 0,
      });
      expect((await store.getMessages(sid)).map((m) => m.content)).toEqual(["before", "after", "during"]);
    });

    it("gives up a write whose reply never comes (a partitioned network) and heals when the network does", async () => {
      const url = await cluster().createDatabase();
      const proxy = await startTcpProxy(cluster().port);
      try {
        const through = url.replace(`:${cluster().port}/`, `:${proxy.port}/`);
        const store = await openPostgresStore({
          url: through,
          profile: "default",
          spoolDir: `${tempDir()}/spool`,
          connectTimeoutMs: 1_000,
          statementTimeoutMs: 500,
          pingEveryMs: 200,
        });
        try {
          const sid = await store.createSession();
          proxy.blackhole(true);
          const started = Date.now();
          const lost = await rejected(() =>
            store.appendMessage({ session_id: sid, role: "user", content: "x" }),
          );
          // Not a hang: the client's limit (statement limit + 1 s) ends the wait.
          expect(Date.now() - started).toBeLessThan(5_000);
          expect(["store_unavailable", "store_commit_unknown"]).toContain(lost.code);
          expect(store.health().unavailable).not.toBeNull();
          proxy.blackhole(false);
          await until(() => store.health().unavailable === null, 10_000, "the store healed", 50);
          await store.appendMessage({ session_id: sid, role: "user", content: "after", uid: "u_after" });
          expect((await store.getMessages(sid)).map((m) => m.content)).toContain("after");
        } finally {
          await store.shutdown();
        }
      } finally {
        await proxy.close();
      }
    });

    it("cancels a write held up by a lock past the statement limit as busy, not as the database away", async () => {
      const url = await cluster().createDatabase();
      const store = await openPostgresStore({
        url,
        profile: "default",
        spoolDir: `${tempDir()}/spool`,
        statementTimeoutMs: 300,
      });
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        const sid = await store.createSession();
        await holder.query("BEGIN");
        await holder.query("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", [sid]);
        const busy = await rejected(() =>
          store.appendMessage({ session_id: sid, role: "user", content: "x" }),
        );
        expect(busy.code).toBe("store_busy");
        expect(busy.message).toMatch(/ran past its time limit and was cancelled/);
        expect(store.health().unavailable).toBeNull();
        await holder.query("ROLLBACK");
        await store.appendMessage({ session_id: sid, role: "user", content: "x" });
      } finally {
        await holder.end();
        await store.shutdown();
      }
    });

    it("says a write waiting for a connection of a busy pool is busy, not that the database is away", async () => {
      const url = await cluster().createDatabase();
      const { store, spoolDir } = await openPostgresAt(url, { poolMax: 1, connectTimeoutMs: 300 });
      const sid = await store.createSession();
      // Another client holds the session's row: the store's one connection waits on its lock.
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query("BEGIN");
        await holder.query("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", [sid]);
        const waiting = store.appendMessage({ session_id: sid, role: "user", content: "waits" });
        const busy = await rejected(() =>
          store.appendMessage({ session_id: sid, role: "user", content: "x" }),
        );
        expect(busy.code).toBe("store_busy");
        expect(store.health().unavailable).toBeNull();
        await holder.query("COMMIT");
        expect((await waiting).seq).toBe(1);
      } finally {
        await holder.end();
      }
      expect(existsSync(spoolDir)).toBe(false);
    });

    it("takes writes again after the server crashed and restarted, without reopening", async () => {
      const db = cluster();
      const { store } = await openPostgresAt(await db.createDatabase());
      const sid = await store.createSession();
      await store.appendMessage({ session_id: sid, role: "user", content: "one" });
      await db.kill();
      await db.start();
      // The pool's connections died with the server: the next write opens a new one by itself.
      expect((await store.appendMessage({ session_id: sid, role: "user", content: "two" })).seq).toBe(2);
      expect((await store.getMessages(sid)).map((m) => m.content)).toEqual(["one", "two"]);
    });
  });
}
