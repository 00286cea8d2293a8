// The instances component on SQLite, in-process: the gateway's monitor shows this process as the
// only instance with the turns its lease names, `tenax status`'s reading says one gateway per
// profile (and that none runs when none answers), and /metrics carries the instance series and the
// counters fed by the store's takeover and fencing events.
import { afterEach, describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { Scheduler } from "../agent/scheduler.js";
import { defaultConfig } from "../config/schema.js";
import { localOwners } from "../core/owners.js";
import { HealthRoutes } from "../gateway/health-routes.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { StoreEvent } from "../store/store-types.js";
import { EventHub } from "./event-hub.js";
import type { InstancesComponent } from "./instances-component.js";
import { probeLayers } from "./layer-probe.js";
import { HealthMonitor } from "./monitor.js";
import { collectStatus, openForStatus } from "./status.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function sqliteGateway() {
  const paths = tempProfile();
  const config = defaultConfig();
  const store = await openStore(paths);
  const scheduler = new Scheduler();
  const owners = localOwners();
  const startedAt = Date.now() - 5_000;
  const monitor = new HealthMonitor({
    paths,
    config,
    store,
    scheduler,
    hub: new EventHub(),
    layers: () => probeLayers(paths, config, Date.now()),
    gateway: () => ({ stopping: false, turnsInFlight: 0, maxTurns: 4, startedAt, address: null }),
    instances: { registry: null, owners, startedAt },
  });
  cleanup.push(
    () => releaseStore(store),
    () => scheduler.stop(),
    () => monitor.close(),
  );
  return { paths, config, store, monitor, owners, startedAt };
}

describe("the instances component on SQLite", () => {
  it("shows this gateway as the one instance, with the turns its lease names", async () => {
    const g = await sqliteGateway();
    const session = await g.store.createSession();
    await g.store.startTurn(session, 60_000, g.owners.turnOwner);
    // A turn leased to another process is not this instance's.
    const other = await g.store.createSession();
    await g.store.startTurn(other, 60_000, "pid:999999999");

    const report = await g.monitor.report();
    const instances = report.components.instances as unknown as InstancesComponent;
    expect(instances).toMatchObject({
      status: "ok",
      engine: "sqlite",
      judged_by: "process",
      alive: 1,
      gone: 0,
      skew_ms: 0,
      skew_max_ms: 2_000,
    });
    expect(instances.instances).toEqual([
      expect.objectContaining({
        id: `pid:${process.pid}`,
        pid: process.pid,
        state: "alive",
        self: true,
        started_at: g.startedAt,
        turns_running: 1,
        platforms: null,
        last_takeover: null,
      }),
    ]);
    expect(instances.detail).toMatch(
      new RegExp(
        `^one instance \\(SQLite: one gateway per profile\\): pid:${process.pid} \\(this gateway, host .+, pid ${process.pid}, 1 turn running\\)$`,
      ),
    );
  });

  it("puts the instance series and the takeover and fencing counters on /metrics", async () => {
    const g = await sqliteGateway();
    const routes = new HealthRoutes(new EventHub(), g.monitor, () => ({ turns_in_flight: 0, started_at: 0 }));
    const before = await routes.metrics();
    expect(before).toContain(
      "# TYPE tenax_instance_clock_skew_seconds gauge\ntenax_instance_clock_skew_seconds 0\n",
    );
    expect(before).toContain('tenax_instances{state="alive"} 1\ntenax_instances{state="gone"} 0\n');
    expect(before).toContain("# TYPE tenax_takeovers_total counter\ntenax_takeovers_total 0\n");
    expect(before).toContain("tenax_fenced_writes_total 0\n");

    // Whoever emits them (the turn takeover, the fencing of a stale lease), they are counted by type.
    const emitted = (type: string) => ({ type, path: "x" }) as unknown as StoreEvent;
    routes.onStoreEvent(emitted("turn_takeover"));
    routes.onStoreEvent(emitted("turn_takeover"));
    routes.onStoreEvent(emitted("lease_lost"));
    routes.onStoreEvent(emitted("store.busy_retry"));
    const after = await routes.metrics();
    expect(after).toContain("tenax_takeovers_total 2\n");
    expect(after).toContain("tenax_fenced_writes_total 1\n");
  });

  it("reads as one gateway per profile from outside, saying when none runs", async () => {
    const paths = tempProfile();
    const config = defaultConfig();
    const store = await openStore(paths);
    cleanup.push(() => releaseStore(store));
    const opened = await openForStatus(paths, config);
    cleanup.push(() => opened.reader?.close());
    const quiet = await collectStatus({ paths, config, ...opened, now: Date.now() });
    expect(quiet.components.instances).toMatchObject({
      status: "ok",
      engine: "sqlite",
      instances: [],
      detail: "one instance: the profile's one gateway (SQLite has no instance registry)",
    });
    const down = await collectStatus({
      paths,
      config,
      ...opened,
      now: Date.now(),
      gateway: async () => ({
        url: "http://127.0.0.1:1",
        source: "config",
        problem: "nothing answers",
        answered: null,
        gateway: { status: "down", detail: "not running", next: null, url: "http://127.0.0.1:1", pid: null },
        scheduler: { status: "unknown", detail: "", next: null, lag_ms: null, max_lag_ms: null },
        health: null,
        checked_at: Date.now(),
      }),
    });
    expect(down.components.instances.detail).toBe("one gateway per profile on SQLite, and none runs now");
    expect(down.components.instances.status).toBe("ok");
  });
});
