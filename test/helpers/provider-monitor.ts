// A gateway's HealthMonitor in-process, for the providers component: a real store in a temp
// profile, the real layer probe, a recorder over that store and the real provider probe, closed
// after each test. `keyOf` is the key a `models` probe sends (by default a fixed one, recorded).
import type { Server } from "node:http";
import { afterEach } from "vitest";
import { Scheduler } from "../../src/agent/scheduler.js";
import { configSchema } from "../../src/config/schema.js";
import type { Redactor } from "../../src/core/redact.js";
import { EventHub } from "../../src/health/event-hub.js";
import { probeLayers } from "../../src/health/layer-probe.js";
import { HealthMonitor } from "../../src/health/monitor.js";
import type { ProvidersComponent } from "../../src/health/provider-component.js";
import { ProviderHealthRecorder } from "../../src/llm/provider-health.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import { tempProfile } from "./tmp.js";
import { until as untilHolds } from "./until.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** Run `fn` after this test, after what was registered later. */
export function afterThisTest(fn: () => Promise<void> | void): void {
  cleanup.push(fn);
}

export async function providerMonitor(
  yaml: Record<string, unknown>,
  options: { keyOf?: (provider: string) => Promise<string | null>; redactor?: Redactor } = {},
) {
  const paths = tempProfile();
  const config = configSchema.parse(yaml);
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const scheduler = new Scheduler();
  const recorder = new ProviderHealthRecorder({
    store,
    now: Date.now,
    ...(options.redactor ? { redactor: options.redactor } : {}),
  });
  const keys: string[] = [];
  const monitor = new HealthMonitor({
    paths,
    config,
    store,
    scheduler,
    hub: new EventHub(),
    layers: () => probeLayers(paths, config, Date.now()),
    intervalMs: 100,
    timeoutMs: 2000,
    gateway: () => ({ stopping: false, turnsInFlight: 0, maxTurns: 4, startedAt: Date.now(), address: null }),
    providers: {
      recorder,
      keyOf:
        options.keyOf ??
        (async (provider) => {
          keys.push(provider);
          return "sk-probe-key-123456";
        }),
    },
  });
  cleanup.push(
    () => releaseStore(store),
    () => scheduler.stop(),
    () => monitor.close(),
  );
  const providers = async () =>
    (await monitor.report()).components.providers as unknown as ProvidersComponent;
  return { paths, config, store, recorder, monitor, providers, keys };
}

export const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(what: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  await untilHolds(what, ms, "the awaited condition");
}

/** Listen on 127.0.0.1 (a free port by default), closed after the test; resolves with the port. */
export async function listenOn(server: Server, port = 0): Promise<number> {
  const bound = await new Promise<number>((resolve) =>
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    }),
  );
  cleanup.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return bound;
}
