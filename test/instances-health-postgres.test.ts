// The profile's instances on a shared PostgreSQL store as every voice tells them: a real gateway
// (the CLI) and an instance in a process of its own are both alive on /health, /metrics and
// `tenax status`, with the turns each one's lease names; the one killed with -9 is shown gone; with
// no gateway, `tenax status` judges them by one look at the locks. A clock off from the database's
// degrades the component (naming the instance and the skew), and far off refuses a gateway's start.
import { appendFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import {
  clockSkewRefusal,
  gatewayInstancesComponent,
  type InstanceRow,
  type InstancesComponent,
} from "../src/health/instances-component.js";
import { InstanceRegistry } from "../src/store/instances.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, refusedGateway, simProfile, startGateway } from "./helpers/gateway.js";
import { closeAfterEach } from "./helpers/opened.js";
import { instanceHolder, usePostgresCluster } from "./helpers/postgres.js";
import { openPostgresAt } from "./helpers/store-engines.js";
import { tempProfile } from "./helpers/tmp.js";
import { untilValue } from "./helpers/until.js";

const cluster = usePostgresCluster();
const CLOCK_AHEAD = pathToFileURL(new URL("./fixtures/clock-ahead.mjs", import.meta.url).pathname).href;

const opened = closeAfterEach();

beforeAll(() => requireBuild());

async function postgresProfile() {
  const { home, paths } = await simProfile();
  const url = await cluster().createDatabase();
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the config names the variable, as a user writes it
  appendFileSync(paths.config, 'store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }\n');
  writeFileSync(paths.env, `TENAX_DATABASE_URL=${url}\n`, { mode: 0o600 });
  return { home, paths, url };
}

async function instancesOf(gw: GatewayProcess): Promise<InstancesComponent> {
  const body = (await (await gw.fetch("/health")).json()) as {
    components: { instances: InstancesComponent };
  };
  return body.components.instances;
}

const row = (c: InstancesComponent, tag: string): InstanceRow | undefined =>
  c.instances.find((i) => i.tag === tag);

async function statusInstances(home: string): Promise<InstancesComponent> {
  const run = await tenaxAsync(home, ["status", "--json"]);
  return (JSON.parse(run.stdout) as { components: { instances: InstancesComponent } }).components.instances;
}

describe("the instances component on PostgreSQL", () => {
  it("shows a gateway and another instance alive, then the one killed with -9 gone, on /health, /metrics and tenax status", async () => {
    const { home, url } = await postgresProfile();
    const gw = await startGateway(home);
    const first = await untilValue(
      () => instancesOf(gw),
      (c) => c.alive === 1,
      10_000,
      "the gateway listed",
      50,
    );
    const self = first.instances.find((i) => i.self);
    expect(self).toMatchObject({ state: "alive", pid: gw.child.pid, host: hostname(), platforms: null });
    expect(first).toMatchObject({ status: "ok", engine: "postgres", judged_by: "registry" });

    const other = await instanceHolder(opened, url, 250);
    const { store } = await openPostgresAt(url);
    const session = await store.createSession();
    await store.startTurn(session, 60_000, other.tag);
    const both = await untilValue(
      () => instancesOf(gw),
      (c) => row(c, other.tag)?.state === "alive",
      10_000,
      "the other instance listed alive",
      50,
    );
    expect(both).toMatchObject({ status: "ok", alive: 2, gone: 0 });
    expect(row(both, other.tag)).toMatchObject({
      self: false,
      pid: other.child.pid,
      turns_running: 1,
      last_takeover: null,
    });
    expect(both.detail).toMatch(/^2 alive, 0 gone: i_\S+ \(this gateway, host .+, pid \d+, 0 turns running/);
    expect(both.detail).toContain(
      `${other.tag.slice(5)} (host ${hostname()}, pid ${other.child.pid}, 1 turn running`,
    );
    expect(Math.abs(both.skew_ms ?? Number.NaN)).toBeLessThan(1_000);

    const metrics = await (await gw.fetch("/metrics")).text();
    expect(metrics).toContain('tenax_instances{state="alive"} 2\n');
    expect(metrics).toMatch(/^tenax_instance_clock_skew_seconds -?\d+(\.\d+)?$/m);
    expect(metrics).toContain("tenax_takeovers_total 0\n");

    // tenax status, with the gateway answering, tells its registry's view.
    expect(await statusInstances(home)).toMatchObject({ judged_by: "registry", alive: 2 });

    const killedAt = Date.now();
    other.child.kill("SIGKILL");
    const after = await untilValue(
      () => instancesOf(gw),
      (c) => row(c, other.tag)?.state === "gone",
      15_000,
      "the killed instance shown gone",
      50,
    );
    console.log(`instance killed with -9 shown gone on /health after ${Date.now() - killedAt} ms`);
    expect(after).toMatchObject({ alive: 1, gone: 1 });
    expect(after.detail).toMatch(
      new RegExp(`; gone: ${other.tag.slice(5)} \\(host .+, last heartbeat \\d+ s ago`),
    );
    expect(await (await gw.fetch("/metrics")).text()).toContain('tenax_instances{state="gone"} 1\n');

    // No gateway: tenax status reads the rows and takes one look at the locks.
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    const third = await instanceHolder(opened, url, 250);
    const outside = await statusInstances(home);
    expect(outside).toMatchObject({ judged_by: "locks", engine: "postgres", skew_ms: null });
    expect(row(outside, third.tag)?.state).toBe("alive");
    expect(row(outside, `inst:${self?.id}`)?.state).toBe("gone"); // it marked itself stopped
    expect(row(outside, other.tag)?.state).not.toBe("alive"); // its lock went with it
    const text = await tenaxAsync(home, ["status"]);
    expect(text.stdout).toMatch(/^ {2}instances {4}ok {8}1 alive, (1 unknown, 1 gone|2 gone): /m);
  }, 120_000);

  it("is degraded by a clock past instances.clock_skew_max, naming the instance and the skew; down past five times it", async () => {
    const url = await cluster().createDatabase();
    const { store } = await openPostgresAt(url);
    const paths = tempProfile();
    const skewed = async (aheadMs: number) => {
      const registry = opened.add(
        new InstanceRegistry(store, { heartbeatMs: 250, clock: { now: () => Date.now() + aheadMs } }),
        (r) => r.stop(),
      );
      await registry.start();
      const self = { registry, owners: registry.owners(), startedAt: Date.now() };
      return { registry, component: await gatewayInstancesComponent(paths, store, self, 2_000, Date.now()) };
    };

    const fine = await skewed(0);
    expect(fine.component.status).toBe("ok");
    expect(clockSkewRefusal(fine.registry, 2_000)).toBeNull();

    const off = await skewed(3_500);
    const id = off.registry.self.slice(5);
    expect(off.component.status).toBe("degraded");
    expect(off.component.skew_ms).toBeGreaterThan(3_000);
    expect(off.component.detail).toMatch(
      new RegExp(
        `^instance ${id} \\(this gateway, on ${hostname()}\\): its clock is 3\\.\\d s ahead of the database's, past instances\\.clock_skew_max \\(2 s\\); `,
      ),
    );
    expect(off.component.next).toContain("timedatectl");
    expect(clockSkewRefusal(off.registry, 2_000)).toBeNull();

    const far = await skewed(-12_000);
    expect(far.component.status).toBe("down");
    expect(far.component.detail).toMatch(
      /its clock is 1[12]\.\d s behind the database's, .*past 5 times it a gateway refuses to start/,
    );
    const refusal = clockSkewRefusal(far.registry, 2_000);
    expect(refusal?.code).toBe("clock_skew");

    // Each publishes its skew in its row: the instance whose own clock is right sees both others'
    // (degraded, never down: each other host refuses itself), naming their hosts.
    const fineSees = await untilValue(
      () =>
        gatewayInstancesComponent(
          paths,
          store,
          { registry: fine.registry, owners: fine.registry.owners(), startedAt: 0 },
          2_000,
          Date.now(),
        ),
      (c) => c.instances.filter((r) => !r.self && r.clock_skew_ms !== null).length === 2,
      10_000,
      "the other two instances' published skew",
    );
    const offId = off.registry.self.slice(5);
    const farId = far.registry.self.slice(5);
    expect(fineSees.status).toBe("degraded");
    expect(fineSees.skew_ms).toBeLessThan(1_000);
    expect(fineSees.instances.find((r) => r.id === offId)?.clock_skew_ms).toBeGreaterThan(3_000);
    expect(fineSees.detail).toContain(
      `instance ${offId} (host ${hostname()}, pid ${process.pid}): its clock is 3.`,
    );
    expect(fineSees.detail).toMatch(
      new RegExp(`instance ${farId} \\(host [^)]*\\): its clock is 1[12]\\.\\d s behind`),
    );
    expect(fineSees.next).toContain(`set the clock of host ${hostname()} right`);
  }, 60_000);

  it("refuses to start a gateway whose host clock is more than five times the bound off the database's", async () => {
    const { home } = await postgresProfile();
    const refused = await refusedGateway(home, ["--port", "0"], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import=${CLOCK_AHEAD}`.trim(),
      TENAX_TEST_CLOCK_AHEAD_MS: "30000",
    });
    expect(refused.status).toBe(1);
    expect(refused.output).toMatch(
      /refusing to start: this host's clock is (29\.\d|30\.\d) s ahead of the database's, more than 5 times instances\.clock_skew_max \(2 s\)/,
    );
    expect(refused.output).toContain("timedatectl status");
    // Nothing of it is left registered as alive: tenax status finds it stopped.
    const seen = await statusInstances(home);
    expect(seen.alive).toBe(0);
  }, 60_000);
});
