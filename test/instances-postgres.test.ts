// The instance registry on PostgreSQL, where instances run in processes of their own (on any host)
// and are alive while their session advisory lock is held: how pg_locks shows such a lock, an
// instance killed with -9 seen gone within seconds, a live one never, and a database restart or a
// session holding our lock reported and healed. The child instances run the compiled registry.
import { describe, expect, it } from "vitest";
import type { InstanceLockState, LockLiveness } from "../src/store/instance-types.js";
import { InstanceRegistry, type InstanceRegistryOptions } from "../src/store/instances.js";
import { HELD_ADVISORY_KEYS, instanceLockKey } from "../src/store/postgres/pg-instance-lock.js";
import { PG_MIGRATIONS, PG_SCHEMA_VERSION } from "../src/store/postgres/pg-schema.js";
import type { PostgresStore } from "../src/store/postgres/postgres-store.js";
import { closeAfterEach } from "./helpers/opened.js";
import { instanceHolder, pgClient, usePostgresCluster } from "./helpers/postgres.js";
import { openPostgresAt } from "./helpers/store-engines.js";
import { until } from "./helpers/until.js";

const cluster = usePostgresCluster();
const opened = closeAfterEach();

const client = (url: string) => pgClient(opened, url);

async function registry(store: PostgresStore, options: InstanceRegistryOptions = {}) {
  const r = opened.add(new InstanceRegistry(store, { heartbeatMs: 250, relockMs: 200, ...options }), (r) =>
    r.stop(),
  );
  await r.start();
  return r;
}

describe("instances on PostgreSQL", () => {
  it("reads held advisory keys from pg_locks as PostgreSQL lays them out: classid high, objid low", async () => {
    const url = await cluster().createDatabase();
    const { store } = await openPostgresAt(url);
    const holderClient = await client(url);
    // The halves' edges: signs, a low half with its top bit set, the extremes of a bigint.
    const keys = [
      "1",
      "-1",
      "2147483648",
      "4294967295",
      "4294967296",
      "-2147483649",
      "-9223372036854775808",
      "9223372036854775807",
    ];
    for (const key of keys) await holderClient.query("SELECT pg_advisory_lock($1::bigint)", [key]);
    // A lock of two int4 keys (objsubid 2) and one in another database are not ours to read.
    await holderClient.query("SELECT pg_advisory_lock(1, 2)");
    const elsewhere = await client(await cluster().createDatabase());
    await elsewhere.query("SELECT pg_advisory_lock(77)");

    const reader = await client(url);
    const { rows } = await reader.query<{ key: string }>(HELD_ADVISORY_KEYS);
    expect(rows.map((r) => r.key).sort()).toEqual([...keys].sort());

    // The key of an instance: sha256's first 8 bytes, signed, as PostgreSQL itself computes it.
    const id = "i_0123456789abcdefghjkmnpqrs";
    const { rows: computed } = await reader.query<{ key: string }>(
      `SELECT ('x' || left(encode(sha256(convert_to('tenax:instance:' || $1, 'UTF8')), 'hex'), 16))::bit(64)::bigint::text AS key`,
      [id],
    );
    expect(instanceLockKey(id)).toBe(computed[0]?.key);

    const instances = store.instances() as LockLiveness;
    expect(instances.liveness).toBe("lock");
    await holderClient.query("SELECT pg_advisory_lock($1::bigint)", [instanceLockKey(id)]);
    expect([...(await instances.lockHolders([id, "i_other"]))]).toEqual([id]);
    await holderClient.query("SELECT pg_advisory_unlock($1::bigint)", [instanceLockKey(id)]);
    expect([...(await instances.lockHolders([id]))]).toEqual([]);
  });

  it("migrates a database of schema 1 to the instances schema, keeping its rows", async () => {
    const url = await cluster().createDatabase();
    const setup = await client(url);
    await setup.query(`CREATE TABLE tenax_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
    await setup.query(PG_MIGRATIONS[0]?.sql ?? "");
    await setup.query(`INSERT INTO tenax_meta VALUES ('schema_version', '1'), ('store_id', 'store_old'), ('profile', 'default');
      INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('s_old', 'kept', 1, 2)`);
    const { store } = await openPostgresAt(url);
    expect(PG_SCHEMA_VERSION).toBe(4);
    expect((await store.stats()).schema_version).toBe(PG_SCHEMA_VERSION);
    expect(store.storeId).toBe("store_old");
    expect((await store.getSession("s_old"))?.title).toBe("kept");
    await store.instances().register({ id: "i_new", host: "h", pid: 1, version: "", meta: {} });
    expect((await store.listInstances()).map((i) => i.id)).toEqual(["i_new"]);
  });

  it("sees an instance killed with -9 in another process gone within seconds", async () => {
    const url = await cluster().createDatabase();
    const { store } = await openPostgresAt(url);
    const observer = await registry(store, { heartbeatMs: 250 });
    const { child, tag } = await instanceHolder(opened, url, 250);
    await until(() => observer.list().some((i) => `inst:${i.id}` === tag), 5_000, "the child is listed");
    expect(observer.gone(tag)).toBe(false);
    expect(await (store.instances() as LockLiveness).lockHolders([tag.slice(5)])).toEqual(
      new Set([tag.slice(5)]),
    );

    const killedAt = Date.now();
    child.kill("SIGKILL");
    await until(() => observer.gone(tag), 10_000, "the killed instance is gone");
    const elapsed = Date.now() - killedAt;
    console.log(`instance killed with -9 judged gone after ${elapsed} ms (heartbeat 250 ms)`);
    expect(elapsed).toBeLessThan(5_000);
    // Its row says nothing of it (no stop was written): the lock alone told.
    expect(observer.list().find((i) => `inst:${i.id}` === tag)?.stopped_at).toBeNull();
    expect(observer.gone(observer.self)).toBe(false);
  });

  it("never judges a live instance in another process gone across many refreshes, and sees it stop", async () => {
    const url = await cluster().createDatabase();
    const { store } = await openPostgresAt(url);
    const observer = await registry(store, { heartbeatMs: 100 });
    const { child, tag } = await instanceHolder(opened, url, 100);
    const refreshes = new Set<number>();
    let judgedGone = 0;
    await until(
      () => {
        const at = observer.health().refreshed_at;
        if (at !== null && observer.list().some((i) => `inst:${i.id}` === tag)) refreshes.add(at);
        if (observer.gone(tag)) judgedGone++;
        return refreshes.size >= 40;
      },
      30_000,
      "40 refreshes",
    );
    expect(judgedGone).toBe(0);
    expect(observer.health()).toMatchObject({ status: "ok", lock: "held", failures: 0 });
    expect(Math.abs(observer.skewMs())).toBeLessThan(1_000);

    child.kill("SIGTERM");
    await until(() => observer.gone(tag), 5_000, "the stopped instance is gone");
    expect(observer.list().find((i) => `inst:${i.id}` === tag)?.stopped_at).not.toBeNull();
  });

  it("reports itself degraded while the database restarts, then holds its lock again", async () => {
    const url = await cluster().createDatabase();
    const { store } = await openPostgresAt(url);
    const changes: InstanceLockState[] = [];
    const r = await registry(store, { heartbeatMs: 200, onLockChange: (state) => changes.push(state) });
    const id = r.self.slice(5);
    expect(r.health()).toMatchObject({ status: "ok", lock: "held" });

    await cluster().stop();
    await until(() => r.health().status === "degraded", 5_000, "degraded while the database is down");
    expect(r.health().lock).toBe("lost");
    expect(r.health().detail).toBeTruthy();
    await cluster().start();
    await until(() => r.health().status === "ok", 15_000, "healthy again once the database is back");
    expect(r.health().lock).toBe("held");
    expect(changes).toEqual(expect.arrayContaining(["lost", "held"]));
    expect(await (store.instances() as LockLiveness).lockHolders([id])).toEqual(new Set([id]));

    // Another process, opened after the restart, finds it alive.
    const { store: other } = await openPostgresAt(url);
    const observer = await registry(other);
    expect(observer.gone(r.self)).toBe(false);
  });

  it("says so when another session holds its lock as it takes it again, and takes it once free", async () => {
    const url = await cluster().createDatabase();
    const { store } = await openPostgresAt(url);
    const r = await registry(store, { heartbeatMs: 200, relockMs: 500 });
    const key = instanceLockKey(r.self.slice(5));
    const intruder = await client(url);
    const { rows } = await intruder.query<{ pid: number }>(
      `SELECT pid FROM (${HELD_ADVISORY_KEYS}) h WHERE key = $1`,
      [key],
    );
    expect(rows).toHaveLength(1);
    // End the registry's lock session and take its lock before the registry can take it again.
    await intruder.query("SELECT pg_terminate_backend($1)", [rows[0]?.pid]);
    await intruder.query("SELECT pg_advisory_lock($1::bigint)", [key]);
    await until(() => r.health().lock === "conflict", 5_000, "the conflict is reported");
    expect(r.health().status).toBe("degraded");
    expect(r.health().detail).toMatch(/held by another session \(backend \d+/);
    await intruder.query("SELECT pg_advisory_unlock($1::bigint)", [key]);
    await until(() => r.health().lock === "held", 5_000, "the lock is held again");
    expect(r.health().status).toBe("ok");
  });
});
