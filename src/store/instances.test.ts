import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { deadOwnerTag } from "../../test/helpers/dead-owner.js";
import { fakeTimers } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { newId } from "../core/ids.js";
import { selfIdentity } from "../core/process-identity.js";
import { ownerOf } from "../core/process-owner.js";
import {
  INSTANCE_ID_PREFIX,
  type InstanceSnapshot,
  instanceGone,
  PARTITION_SILENCE_MS,
  processMeta,
} from "./instance-liveness.js";
import type { InstanceView, ProcessLiveness } from "./instance-types.js";
import { InstanceRegistry, type InstanceSource } from "./instances.js";
import { storeOptions } from "./registry.js";
import { Store } from "./store.js";

const opened: Store[] = [];
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
});

async function setup() {
  const time = fakeTimers();
  const store = await Store.open({
    ...storeOptions(tempProfile()),
    integrityCheckTimeoutMs: 0,
    deps: { clock: { now: time.now } },
  });
  opened.push(store);
  const registry = (
    options: ConstructorParameters<typeof InstanceRegistry>[1] = {},
    source: InstanceSource = store,
  ) => new InstanceRegistry(source, { clock: { now: time.now }, timers: time.timers, ...options });
  return { time, store, rows: store.instances() as ProcessLiveness, registry };
}

/** Let the refresh a fired timer started run to its end (SQLite answers within a few turns). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("the instance registry (SQLite: one host, pids)", () => {
  it("registers this process, beats every heartbeatMs, and marks it stopped on stop()", async () => {
    const { time, store, registry } = await setup();
    const r = registry({ heartbeatMs: 2_000, version: "9.9.9", meta: { serves: "gateway" } });
    expect(() => r.self).toThrow(/not started/);
    const tag = await r.start();
    expect(tag).toMatch(/^inst:i_[0-9a-z]{26}$/);
    expect(r.self).toBe(tag);
    const [row] = await store.listInstances();
    expect(row).toMatchObject({
      id: tag.slice(5),
      host: hostname(),
      pid: process.pid,
      started_at: time.start,
      heartbeat_at: time.start,
      stopped_at: null,
      version: "9.9.9",
      meta: { serves: "gateway", ...processMeta() },
    });
    expect(r.list().map((i) => i.id)).toEqual([row?.id]);
    expect(r.health()).toMatchObject({
      status: "ok",
      liveness: "process",
      lock: null,
      skew_ms: 0,
      failures: 0,
    });

    r.setMeta({ serves: "cron" });
    time.advance(2_000);
    await settle();
    const [beaten] = await store.listInstances();
    expect(beaten?.heartbeat_at).toBe(time.start + 2_000);
    expect(beaten?.meta.serves).toBe("cron");
    expect(r.health().refreshed_at).toBe(time.start + 2_000);

    await r.stop();
    expect((await store.listInstances())[0]?.stopped_at).toBe(time.start + 2_000);
    expect(r.health().status).toBe("stopped");
    expect(time.pending).toBe(0);
  });

  it("judges tags: dead and stopped instances are gone, live ones and ids newer than the snapshot are not", async () => {
    const { time, rows, registry } = await setup();
    const observer = registry({ silentAfterMs: 15_000 });
    const dead = await deadOwnerTag(); // pid:N@START of a process that has ended
    const [deadPid, deadStart] = dead.slice(4).split("@").map(Number);
    const register = (host: string, pid: number, meta: Record<string, unknown>) => {
      const id = newId(INSTANCE_ID_PREFIX, time.now());
      return rows.register({ id, host, pid, version: "", meta }).then(() => `inst:${id}`);
    };
    const deadOne = await register(hostname(), deadPid ?? 0, { proc_start: deadStart });
    const liveOne = await register(hostname(), process.pid, processMeta());
    const reusedPid = await register(hostname(), process.pid, {
      proc_start: (selfIdentity()?.start ?? 0) + 1,
    });
    const stoppedOne = await register(hostname(), process.pid, processMeta());
    await rows.stop(stoppedOne.slice(5));
    const elsewhere = await register("another-host", 1, {});
    const olderUnknown = `inst:${newId(INSTANCE_ID_PREFIX, time.now() - 20_000)}`;

    // Nothing is judged before the first refresh.
    for (const tag of [deadOne, stoppedOne, olderUnknown]) expect(observer.gone(tag)).toBe(false);
    await observer.start();
    expect(observer.gone(deadOne)).toBe(true);
    expect(observer.gone(reusedPid)).toBe(true);
    expect(observer.gone(stoppedOne)).toBe(true);
    expect(observer.gone(liveOne)).toBe(false);
    expect(observer.gone(elsewhere)).toBe(false);
    expect(observer.gone(observer.self)).toBe(false);
    expect(observer.gone(olderUnknown)).toBe(true);
    expect(observer.gone("inst:not-an-instance-id")).toBe(true);
    // Registered after the snapshot began: not judged until a refresh has read it.
    const newer = `inst:${newId(INSTANCE_ID_PREFIX, time.now() + 1)}`;
    expect(observer.gone(newer)).toBe(false);
    // Legacy tags keep their meaning.
    expect(observer.gone(dead)).toBe(true);
    expect(observer.gone(ownerOf())).toBe(false);

    // Another host's row on SQLite is judged by silence alone.
    for (let beat = 0; beat < 8; beat++) {
      time.advance(2_000);
      await settle();
    }
    expect(observer.gone(elsewhere)).toBe(true);
    expect(observer.gone(liveOne)).toBe(false);
    await observer.stop();
  });

  it("never throws from its timer: a failing heartbeat is reported, the snapshot kept, and it heals", async () => {
    const { time, store, rows, registry } = await setup();
    let failing = false;
    const flaky: ProcessLiveness = {
      liveness: "process",
      now: () => rows.now(),
      register: (instance) => rows.register(instance),
      heartbeat: (id, meta) =>
        failing ? Promise.reject(new Error("disk on fire")) : rows.heartbeat(id, meta),
      stop: (id) => rows.stop(id),
      prune: (ms) => rows.prune(ms),
      namedLock: (name, options) => rows.namedLock(name, options),
    };
    const other = `inst:${newId(INSTANCE_ID_PREFIX, time.now())}`;
    await rows.register({
      id: other.slice(5),
      host: hostname(),
      pid: process.pid,
      version: "",
      meta: processMeta(),
    });
    const r = registry(
      { heartbeatMs: 1_000 },
      { instances: () => flaky, listInstances: () => store.listInstances() },
    );
    await r.start();
    failing = true;
    time.advance(1_000);
    await settle();
    time.advance(1_000);
    await settle();
    expect(r.health()).toMatchObject({ status: "degraded", failures: 2 });
    expect(r.health().detail).toContain("disk on fire");
    expect(r.list()).toHaveLength(2);
    expect(r.gone(other)).toBe(false);
    failing = false;
    time.advance(1_000);
    await settle();
    expect(r.health()).toMatchObject({ status: "ok", failures: 0, detail: null });
    await r.stop();
  });

  it("says so when another process removed or stopped its row (evicted), and prunes old rows", async () => {
    const { time, store, rows, registry } = await setup();
    const old = newId(INSTANCE_ID_PREFIX, time.now());
    await rows.register({ id: old, host: "h", pid: 1, version: "", meta: {} });
    time.advance(10_000);
    const r = registry({ heartbeatMs: 1_000, pruneAfterMs: 5_000 });
    await r.start();
    // Housekeeping on start removed the row silent for 10 s; ours stays.
    expect((await store.listInstances()).map((i) => i.id)).toEqual([r.self.slice(5)]);
    await rows.stop(r.self.slice(5));
    time.advance(1_000);
    await settle();
    expect(r.health()).toMatchObject({ status: "degraded", evicted: true });
    expect(r.health().detail).toMatch(/removed or marked stopped/);
    await r.stop();
  });

  it("takes a new id when its row took longer than silentAfterMs to commit", async () => {
    const { time, store, rows, registry } = await setup();
    let slow = 2;
    const lagging: ProcessLiveness = {
      ...rows,
      liveness: "process",
      now: () => rows.now(),
      register: async (instance) => {
        if (slow-- > 0) time.advance(20_000);
        return rows.register(instance);
      },
      heartbeat: (id, meta) => rows.heartbeat(id, meta),
      stop: (id) => rows.stop(id),
      prune: (ms) => rows.prune(ms),
      namedLock: (name, options) => rows.namedLock(name, options),
    };
    const r = registry(
      { silentAfterMs: 15_000 },
      { instances: () => lagging, listInstances: () => store.listInstances() },
    );
    const tag = await r.start();
    const listed = await store.listInstances();
    expect(listed).toHaveLength(3);
    expect(listed.filter((i) => i.stopped_at === null).map((i) => `inst:${i.id}`)).toEqual([tag]);
    await r.stop();
  });
});

describe("the liveness rule on PostgreSQL's locks (made-up snapshots)", () => {
  const view = (id: string, heartbeatAt: number, stoppedAt: number | null = null): InstanceView => ({
    id,
    host: "h",
    pid: 1,
    started_at: 0,
    heartbeat_at: heartbeatAt,
    stopped_at: stoppedAt,
    version: "",
    meta: {},
    warnings: [],
  });
  const rule = { silentAfterMs: 15_000, host: "here", processRuns: () => true };
  const snapshot = (misses: number, holders: string[], heartbeatAt = 99_000): InstanceSnapshot => ({
    at: 100_000,
    instances: new Map([["a", view("a", heartbeatAt)]]),
    holders: new Set(holders),
    misses: new Map(misses > 0 ? [["a", misses]] : []),
  });

  it("a held lock is alive until its holder is silent 30 s (cut off, or hung); one miss is not gone, two are", () => {
    expect(instanceGone(snapshot(0, ["a"], 100_000 - PARTITION_SILENCE_MS), "a", rule)).toBe(false);
    expect(instanceGone(snapshot(0, ["a"], 100_000 - PARTITION_SILENCE_MS - 1), "a", rule)).toBe(true);
    expect(instanceGone(snapshot(0, ["a"], 0), "a", rule)).toBe(true);
    expect(instanceGone(snapshot(1, []), "a", rule)).toBe(false);
    expect(instanceGone(snapshot(2, []), "a", rule)).toBe(true);
    expect(instanceGone(snapshot(1, [], 84_000), "a", rule)).toBe(true);
    expect(instanceGone(null, "a", rule)).toBe(false);
  });
});
