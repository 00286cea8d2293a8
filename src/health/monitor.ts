// Health as one model, served by the gateway: each layer's state with the time it was last
// checked. Slow checks (the store read-only, the key ledger, the disk, a look at providers nobody
// called lately) run in the background on the scheduler, each under a deadline; /health only reads
// their last results and the agent's live view of every call's outcome, so it answers at once even
// while the store or a provider hangs, and says how old each result is.

import type { McpServerState } from "../agent/mcp/mcp-types.js";
import type { Scheduler } from "../agent/scheduler.js";
import type { TenaxConfig } from "../config/schema.js";
import type { CronStats } from "../cron/host.js";
import type { ProviderHealthRecorder } from "../llm/provider-health.js";
import { mergeRecords, type ProviderRecord } from "../llm/provider-state.js";
import { type OutboxBacklog, readOutboxBacklog } from "../outbox/backlog.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { StorePort } from "../store/port.js";
import { Store } from "../store/store.js";
import { StoreVerifier } from "../store/verifier.js";
import { BackgroundProbe, type ProbeState } from "./background-probe.js";
import { readBreakerRecords } from "./circuits.js";
import { gatewayCronComponent } from "./cron-component.js";
import type { CronMetricsInput } from "./cron-metrics.js";
import { readCronSnapshot } from "./cron-snapshot.js";
import { type DiskReading, diskComponent, readDisk } from "./disk.js";
import type { EventHub, FeedEvent } from "./event-hub.js";
import { type GatewayView, gatewayComponent } from "./gateway-component.js";
import {
  type GatewayInstances,
  gatewayInstancesComponent,
  type InstancesComponent,
  storeInstancesComponent,
} from "./instances-component.js";
import type { LayerProbe } from "./layer-probe.js";
import { mcpComponent } from "./mcp-component.js";
import {
  configuredPlatforms,
  type PlatformLive,
  type PlatformsComponent,
  type PlatformsHolding,
  platformsComponent,
} from "./platforms-component.js";
import { configuredProviders, providersComponent } from "./provider-component.js";
import { ProviderProber, probeSubjects } from "./provider-probe.js";
import { type Component, formatDuration, type Level, type StatusReport, worst } from "./status.js";
import { mergeLiveStore, withIntegrity } from "./store-live.js";
import { toolsComponent } from "./tools-component.js";
import { turnsComponent } from "./turns-component.js";

export interface HealthComponent extends Component {
  /** When the result was taken (ms since the epoch), null before the first check. */
  checked_at: number | null;
  age_ms: number | null;
  [extra: string]: unknown;
}

export interface HealthReport {
  status: Level;
  checked_at: number;
  components: Record<string, HealthComponent>;
}

export type { GatewayView } from "./gateway-component.js";

export interface MonitorOptions {
  paths: ProfilePaths;
  config: TenaxConfig;
  store: StorePort;
  scheduler: Scheduler;
  gateway: () => GatewayView;
  hub: EventHub;
  layers: LayerProbe;
  /**
   * The very first look, when it should not wait for the probe's thread to start: the gateway has
   * just opened the same store itself, so reading it in-process once costs a few milliseconds.
   */
  firstLayers?: LayerProbe;
  intervalMs?: number;
  timeoutMs?: number;
  /**
   * Every page of the store is checked at least this often (store/verifier.ts), in slices under
   * `integrityCpuShare` of one core (a bigger store is checked less often); 0: never.
   */
  integrityIntervalMs?: number;
  /** The largest share of one core the store's checks take on average (default 0.01). */
  integrityCpuShare?: number;
  /**
   * The agent's live view of its providers (every call's outcome) and the key a `models` probe
   * sends; without it the providers component is the store's record alone, and nothing is probed.
   */
  providers?: {
    recorder: ProviderHealthRecorder;
    keyOf: (provider: string) => Promise<string | null>;
  };
  /**
   * The cron engine's numbers when it runs in this process (lag, running, queued, runs by job);
   * null or left out: the cron component is read from the store alone.
   */
  cronStats?: () => CronStats | null;
  /** Each chat platform's connection as this gateway's adapters see it; left out: none runs here. */
  platformsLive?: () => Record<string, PlatformLive>;
  /**
   * This gateway as an instance of the profile (its registry on PostgreSQL, its owner tags); left
   * out: the instances are read from the store alone, as `tenax status` reads them.
   */
  instances?: GatewayInstances;
  /** Whether this gateway holds the chat platforms, and who does (null: none configured). */
  platformsHolding?: () => PlatformsHolding | null;
  /** The MCP servers this gateway runs, each as it is now; left out: none runs here. */
  mcpLive?: () => McpServerState[];
  now?: () => number;
}

/** The longest a start waits on the first look at the providers (HealthMonitor.firstProviderLook). */
export const FIRST_PROVIDER_LOOK_MS = 1000;

export class HealthMonitor {
  readonly layers: BackgroundProbe<StatusReport>;
  readonly disk: BackgroundProbe<DiskReading>;
  /** A SQLite store can go bad while every read still works: its continuous page check finds it. */
  readonly integrity: StoreVerifier | null;
  private readonly sqlite: Store | null;
  /** Providers nobody called lately, looked at without a model call (health.provider_probe). */
  readonly providerProbe: ProviderProber | null;
  /** Settles when the first look at the providers has ended (each under its deadline); never rejects. */
  providersReady: Promise<void> = Promise.resolve();
  /** When the first look at the providers began; null before start() or with no probe. */
  private providersSince: number | null = null;
  private readonly now: () => number;
  private readonly intervalMs: number;
  private readonly jobs: { cancel(): void }[] = [];
  private readonly lastProviderEvent = new Map<string, FeedEvent>();
  private readonly unsubscribe: () => void;

  constructor(private readonly options: MonitorOptions) {
    this.now = options.now ?? Date.now;
    this.intervalMs = options.intervalMs ?? 5000;
    const timeout = options.timeoutMs ?? 10_000;
    this.layers = new BackgroundProbe(this.heeded(options.layers), timeout, this.now);
    this.disk = new BackgroundProbe(() => readDisk(options.paths), timeout, this.now);
    // Through the writer, so damage found stops its writes at once (and a damaged index is rebuilt).
    // The store when it is SQLite's (null on PostgreSQL): the continuous page check, and the damage
    // the layer probe meets in its file, are that engine's own.
    this.sqlite = options.store instanceof Store ? options.store : null;
    this.integrity =
      this.sqlite === null
        ? null
        : new StoreVerifier({
            target: this.sqlite,
            everyMs: options.integrityIntervalMs ?? 0,
            cpuShare: options.integrityCpuShare ?? 0.01,
            now: this.now,
            wakeAt: (name, at, fn) => options.scheduler.at(name, at, fn),
          });
    const health = options.config.health;
    this.providerProbe =
      options.providers && health.provider_probe !== "off"
        ? new ProviderProber({
            subjects: probeSubjects(options.config, options.providers.keyOf),
            recorder: options.providers.recorder,
            mode: health.provider_probe,
            timeoutMs: health.provider_probe_timeout * 1000,
            intervalMs: health.provider_probe_interval * 1000,
            now: this.now,
          })
        : null;
    this.unsubscribe = options.hub.subscribe((event) => {
      const provider = event.data.provider;
      if (typeof provider === "string" && event.layer !== null) this.lastProviderEvent.set(provider, event);
    });
    // A database that answers again is news now, not at the next layer check: the store component
    // of the last check (taken while it was away) would say "down" for up to an interval more.
    this.unsubscribeStore = options.store.on((event) => {
      if (event.type === "store.available") void this.layers.once();
    });
  }

  private readonly unsubscribeStore: () => void;

  /** First checks now, then every interval; a one-second tick keeps the scheduler's lag measured. */
  start(): void {
    const { scheduler } = this.options;
    void this.layers.once(this.options.firstLayers && this.heeded(this.options.firstLayers));
    void this.disk.once();
    const probe = this.providerProbe;
    if (probe !== null) {
      // A look never throws (probeProvider); were one to, it is no reason to stop a start.
      this.providersSince = this.now();
      this.providersReady = probe.once().catch(() => undefined);
      this.jobs.push(
        scheduler.every("health: providers", this.options.config.health.provider_probe_interval * 1000, () =>
          probe.once(),
        ),
      );
    }
    this.jobs.push(
      scheduler.every("health: layers", this.intervalMs, () => this.layers.once()),
      scheduler.every("health: disk", Math.max(this.intervalMs, 10_000), () => this.disk.once()),
      scheduler.every("health: tick", 1000, () => true),
    );
    this.integrity?.start();
  }

  /**
   * Settles when the first look at the providers has ended or `limitMs` has passed since it began
   * (at start(), so what the gateway does meanwhile counts), whichever is first; never rejects. The
   * gateway waits on it before it listens, so a provider that answers at once is never `unknown` on
   * the first /health, while one that takes no connection (a host dropping packets, up to
   * provider_probe_timeout) delays no start by more than the limit: it is `unknown` until the look
   * ends, which degrades nothing. It also settles once `signal` aborts (a stop during the start).
   */
  firstProviderLook(limitMs = FIRST_PROVIDER_LOOK_MS, signal?: AbortSignal): Promise<void> {
    const left = this.providersSince === null ? 0 : limitMs - (this.now() - this.providersSince);
    if (left <= 0 || signal?.aborted === true) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    let onAbort: () => void = () => undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, left);
      onAbort = resolve;
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    return Promise.race([this.providersReady, limit]).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
  }

  /**
   * The layer probe reads the store through a read-only connection of its own: damage it meets
   * is damage in the file, so the writer stops at once rather than acknowledge more writes while
   * /health says the store is down.
   */
  private heeded(probe: LayerProbe): LayerProbe {
    return async (signal) => {
      const report = await probe(signal);
      const store = report.components.store;
      if (store.status === "down" && store.damaged) this.sqlite?.reportDamage(store.detail);
      return report;
    };
  }

  close(): void {
    for (const job of this.jobs.splice(0)) job.cancel();
    this.integrity?.stop();
    this.providerProbe?.close();
    this.unsubscribe();
    this.unsubscribeStore();
  }

  /** The cron jobs as the store holds them, and the engine's numbers: read once per /health or /metrics. */
  async cronView(now = this.now()): Promise<CronMetricsInput | null> {
    try {
      return {
        snapshot: await readCronSnapshot(this.options.store, now),
        stats: this.options.cronStats?.() ?? null,
      };
    } catch {
      // A store that cannot be read is the store component's news.
      return null;
    }
  }

  /** The report /health answers with: cheap, never waits for a probe (only for the store's reads). */
  async report(given?: CronMetricsInput | null): Promise<HealthReport> {
    const cron = given === undefined ? await this.cronView() : given;
    const now = this.now();
    // In the model's order (COMPONENT_NAMES), as every voice lists them.
    const components: Record<string, HealthComponent> = {
      gateway: {
        ...gatewayComponent(
          this.options.gateway(),
          this.options.providers?.recorder.localExhaustion() ?? null,
          now,
        ),
        checked_at: now,
        age_ms: 0,
      },
      ...(await this.layerComponents(now)),
      scheduler: this.schedulerComponent(now),
      // Read live: a pending approval is shown the moment it is committed.
      tools: {
        ...(await toolsComponent(this.options.paths, this.options.config, this.options.store, now)),
        checked_at: now,
        age_ms: 0,
      },
      // Read live: a stalled turn is named the moment its process records it.
      turns: {
        ...(await turnsComponent(this.options.paths, this.options.store, now)),
        checked_at: now,
        age_ms: 0,
      },
      // Read live: the registry's last heartbeat (every 2 s) and the turns each instance runs.
      instances: { ...(await this.instancesNow(now)), checked_at: now, age_ms: 0 },
      // Read live too: a run's end or a given-up delivery shows at once.
      cron: {
        ...(await gatewayCronComponent(this.options.paths, this.options.config, cron, now)),
        checked_at: now,
        age_ms: 0,
      },
      // Read live: a message given up or a lost connection shows at once.
      platforms: { ...(await this.platformsNow(now)), checked_at: now, age_ms: 0 },
      // Read live: a server lost or back shows at once.
      mcp: {
        ...mcpComponent(this.options.paths, this.options.config, this.options.mcpLive?.() ?? null, now),
        checked_at: now,
        age_ms: 0,
      },
      disk: this.fromProbe(this.disk.state, now, "disk", (reading) => diskComponent(reading)),
    };
    return { status: worst(Object.values(components).map((c) => c.status)), checked_at: now, components };
  }

  /** The profile's instances as this gateway's registry last saw them, and this process's clock. */
  instancesNow(now = this.now()): Promise<InstancesComponent> {
    const { paths, config, store, instances } = this.options;
    const skewMaxMs = config.instances.clock_skew_max * 1000;
    return instances === undefined
      ? storeInstancesComponent(paths, store, skewMaxMs, now)
      : gatewayInstancesComponent(paths, store, instances, skewMaxMs, now);
  }

  /** The chat platforms: the adapters' connections and every process's outbox backlog. */
  async platformsNow(now = this.now()): Promise<PlatformsComponent> {
    const { paths, config, store } = this.options;
    let backlog: Record<string, OutboxBacklog> = {};
    try {
      if (configuredPlatforms(config).length > 0)
        backlog = await readOutboxBacklog(store, configuredPlatforms(config), undefined, now);
    } catch {
      // A store that cannot be read is the store component's news.
    }
    const live = this.options.platformsLive?.() ?? null;
    return platformsComponent(
      paths,
      config,
      backlog,
      live,
      now,
      false,
      this.options.platformsHolding?.() ?? null,
    );
  }

  /** store, providers, credentials, compression: the probe's report, plus what only this process knows. */
  private async layerComponents(now: number): Promise<Record<string, HealthComponent>> {
    const state = this.layers.state;
    const names = ["store", "providers", "credentials", "compression"] as const;
    const out: Record<string, HealthComponent> = {};
    for (const name of names) {
      out[name] = this.fromProbe(state, now, name, (report) => ({ ...report.components[name] }));
    }
    const live = this.options.store.health();
    const merged = mergeLiveStore(out.store as HealthComponent, live);
    out.store =
      this.integrity === null
        ? merged
        : withIntegrity(merged, live.integrity, this.integrity.health(), this.options.paths);
    out.providers = await this.providersNow(now);
    return out;
  }

  /**
   * Providers as this process sees them this instant (every call's outcome, every probe), merged
   * with the store's records as the layer check last read them (calls other processes made).
   */
  private async providersNow(now: number): Promise<HealthComponent> {
    const { paths, config } = this.options;
    const stored = this.layers.state.value?.components.providers.providers ?? [];
    const live = this.options.providers?.recorder.view() ?? new Map<string, ProviderRecord>();
    const records = new Map<string, ProviderRecord | null>();
    for (const { provider } of configuredProviders(config)) {
      const fromStore = stored.find((p) => p.provider === provider) ?? null;
      records.set(provider, mergeRecords(fromStore, live.get(provider) ?? null));
    }
    // Breakers are read from the store at once: every process writes each change there as it happens.
    const component = providersComponent(
      paths,
      config,
      records,
      now,
      await readBreakerRecords(this.options.store),
    );
    const recent = [...this.lastProviderEvent.entries()];
    return {
      ...component,
      // Every retry, rotation and fallback is on /api/events; the last of each provider is kept here.
      ...(recent.length > 0
        ? {
            last_events: Object.fromEntries(
              recent.map(([p, e]) => [p, { type: e.type, at: e.at, message: e.message }]),
            ),
          }
        : {}),
      checked_at: now,
      age_ms: 0,
    };
  }

  /** Calls and probes of each provider in this process, for /metrics. */
  providerCounters(): ProviderHealthRecorder["counters"] | null {
    return this.options.providers?.recorder.counters ?? null;
  }

  private schedulerComponent(now: number): HealthComponent {
    const lag = this.options.scheduler.lag();
    const status: Level = lag.max_ms > 10_000 ? "down" : lag.max_ms > 1000 ? "degraded" : "ok";
    return {
      status,
      detail: `${lag.jobs} of the gateway's own timers (health checks, leases, upkeep); woke ${lag.last_ms} ms late last time, at worst ${lag.max_ms} ms in the last minute`,
      next:
        status === "ok"
          ? null
          : "something blocks the gateway's event loop: check CPU load and the log (logs/gateway.log)",
      checked_at: now,
      age_ms: 0,
      lag_ms: lag.last_ms,
      max_lag_ms: lag.max_ms,
      jobs: lag.jobs,
    };
  }

  /**
   * A component from a probe's last result: its age is reported, and a probe that has been running
   * past the interval, failed, or is stale turns the component degraded with the reason.
   */
  private fromProbe<T>(
    state: ProbeState<T>,
    now: number,
    name: string,
    build: (value: T) => Component & Record<string, unknown>,
  ): HealthComponent {
    const age = state.checked_at === null ? null : now - state.checked_at;
    const base = { checked_at: state.checked_at, age_ms: age };
    const hungFor = state.running_since === null ? 0 : now - state.running_since;
    if (state.value === null) {
      return {
        ...base,
        status: state.error ? "down" : "degraded",
        detail: state.error
          ? `the ${name} check failed: ${state.error}`
          : `first check running for ${formatDuration(hungFor)}`,
        next: state.error ? "`tenax status` checks it from outside; `tenax doctor` looks deeper" : null,
      };
    }
    const component: HealthComponent = { ...build(state.value), ...base };
    const problem = state.error
      ? `the last check failed (${state.error}); this result is ${formatDuration(age ?? 0)} old`
      : hungFor > this.intervalMs
        ? `the check has not answered for ${formatDuration(hungFor)}; this result is ${formatDuration(age ?? 0)} old`
        : null;
    if (problem === null) return component;
    return {
      ...component,
      status: worst([component.status, "degraded"]),
      detail: `${problem}: ${component.detail}`,
      next: component.next ?? "`tenax doctor` checks the store and disk without waiting on the gateway",
    };
  }
}
