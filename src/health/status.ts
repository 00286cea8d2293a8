// `tenax status` as data: each layer of a profile, read without starting anything (the store
// read-only, the key ledger from it, config as loaded, one look at the gateway), with a status, one
// line for people, and the command that fixes or diagnoses it. Works whether or not any Tenax
// process is running; the dashboard tells the same report, and the gateway's layer check reads it.
import type { TenaxConfig } from "../config/schema.js";
import { CredentialPool, modelScope, type PoolKeyState } from "../llm/credential-pool.js";
import {
  mergeRecords,
  type ProviderRecord,
  parseProviderRecord,
  readProviderRecord,
} from "../llm/provider-state.js";
import { DEFAULT_BASE_URLS } from "../llm/runtime.js";
import { type OutboxBacklog, readOutboxBacklog } from "../outbox/backlog.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import {
  type CredentialState,
  type CredentialStateStore,
  type CredentialUpdate,
  isUsable,
} from "../store/credential-ledger.js";
import type { StoreReads } from "../store/port.js";
import type { EngineSettings } from "../store/registry.js";
import { readBreakerRecords } from "./circuits.js";
import { type CompressionComponent, compressionComponent } from "./compression-component.js";
import { type CronComponent, cronComponent } from "./cron-component.js";
import { diskComponent, readDisk } from "./disk.js";
import { formatDuration } from "./duration.js";
import type {
  GatewayComponent,
  OutsideView,
  ReportedComponent,
  SchedulerComponent,
} from "./gateway-status.js";
import { type InstancesComponent, storeInstancesComponent } from "./instances-component.js";
import { type McpComponent, mcpComponent } from "./mcp-component.js";
import { configuredPlatforms, type PlatformsComponent, platformsComponent } from "./platforms-component.js";
import { configuredProviders, type ProvidersComponent, providersComponent } from "./provider-component.js";
import { type StoreComponent, storeComponent } from "./store-component.js";
import { type ToolsComponent, toolsComponent } from "./tools-component.js";
import { type TurnsComponent, turnsComponent } from "./turns-component.js";

// Where `tenax status` and the dashboard open the store for a look.
export { openForStatus } from "./store-component.js";
export { formatDuration };

/** A whole profile's health, and what `tenax status` exits with. */
export type Level = "ok" | "degraded" | "down";
/**
 * A component's: `unknown` is a layer nobody has seen work or fail yet (a provider never called nor
 * probed). It is shown as such and does not make the whole worse: it is no fault seen.
 */
export type ComponentLevel = Level | "unknown";

export interface Component {
  status: ComponentLevel;
  detail: string;
  /** What to run next, when something is wrong. */
  next: string | null;
}

export interface ProviderKeys {
  provider: string;
  type: string;
  base_url: string | null;
  /**
   * False for a server that needs no key (api_keys left out): `keys` then holds the one pseudo-key
   * it is called with, which may cool down (a rate limit) but is never disabled.
   */
  keyed: boolean;
  keys: PoolKeyState[];
}

export interface StatusReport {
  profile: string;
  status: Level;
  components: {
    /** This profile's gateway, seen from outside (pid file, its /health): when the caller looked. */
    gateway?: GatewayComponent;
    store: StoreComponent;
    providers: ProvidersComponent;
    credentials: Component & { providers: ProviderKeys[] };
    compression: CompressionComponent;
    /** The exec policy, the file roots and the approvals waiting. */
    tools: ToolsComponent;
    /** The running turns, and each stalled one with the command that ends it. */
    turns: TurnsComponent;
    /** The profile's processes on the store (one gateway on SQLite), and this one's clock. */
    instances: InstancesComponent;
    /** The cron jobs. */
    cron: CronComponent;
    /** The chat platforms. */
    platforms: PlatformsComponent;
    /** The MCP servers, as the gateway that runs them sees them. */
    mcp: McpComponent;
    /** Inside the gateway: only its /health can say. Present when the caller looked at the gateway. */
    scheduler?: SchedulerComponent;
    /** Free space under the profile and what the store and logs take. */
    disk?: Component & Record<string, unknown>;
  };
}

/** Every component of the one model, in the order every voice lists them. */
export const COMPONENT_NAMES = [
  "gateway",
  "store",
  "providers",
  "credentials",
  "compression",
  "scheduler",
  "tools",
  "turns",
  "instances",
  "cron",
  "platforms",
  "mcp",
  "disk",
] as const satisfies readonly (keyof StatusReport["components"])[];

export interface StatusInput {
  paths: ProfilePaths;
  config: TenaxConfig;
  /** null when the profile has no store yet, or when it could not be opened (`readerError`). */
  reader: StoreReads | null;
  /** Why the store could not be opened read-only (damage, another owner, a newer schema...). */
  readerError?: unknown;
  /** The engine the profile's config names (SQLite when left out). */
  engine?: EngineSettings;
  now: number;
  /**
   * Look at the gateway from outside (tenax status and the dashboard do; the gateway itself does
   * not): its /health, when it answers with one, speaks for the layers only it can see
   * (GATEWAY_SEES); the others are read here, from the same store, by the same functions.
   */
  gateway?: () => Promise<OutsideView>;
}

/**
 * The layers with an input only the running gateway has, whose component it computes live: the
 * writer's state and its page check (store), the engine's numbers (cron), the chat connections
 * (platforms), the disk it measures, and its instance registry (instances: liveness by lock,
 * refreshed at each heartbeat, and its clock against the database's). The providers are one
 * function of two inputs, the store's records and the gateway's live view of its calls: each voice
 * merges the gateway's view with its own read of the store. Every other layer is a function of the store alone, so each voice
 * computes it itself, from the same records, and is no staler than its own read.
 */
export const GATEWAY_SEES = ["store", "instances", "cron", "platforms", "mcp", "disk"] as const;

/**
 * A profile's health as every voice outside the gateway tells it (`tenax status`, the dashboard),
 * and as the gateway's layer check reads it (without `gateway`). Each layer is computed by one
 * function, the one the gateway's /health uses too, over the same inputs: the gateway's answer for
 * what only it can see, the store for the rest; with no gateway, what this process can read,
 * saying what it cannot see the same way wherever it is read.
 */
export async function collectStatus(input: StatusInput): Promise<StatusReport> {
  const { paths, config, reader, now } = input;
  const outside = input.gateway ? await input.gateway() : null;
  // Nothing runs the jobs or connects the chat platforms while no gateway answers.
  const gatewayDown = outside?.gateway.status === "down";
  const ledger = await readLedger(reader);
  const credentials = await credentialsComponent(paths, config, ledger.states, now);
  if (ledger.problem) {
    credentials.status = worst([credentials.status, "degraded"]);
    credentials.detail = `${ledger.problem}; ${credentials.detail}`;
  }
  const local: StatusReport["components"] = {
    store: await storeComponent(paths, reader, input.readerError, input.engine),
    providers: providersComponent(
      paths,
      config,
      await providerRecords(config, reader),
      now,
      await readBreakerRecords(reader),
    ),
    credentials,
    compression: await compressionComponent(config, reader, now),
    tools: await toolsComponent(paths, config, reader, now),
    turns: await turnsComponent(paths, reader, now),
    instances: await storeInstancesComponent(
      paths,
      reader,
      config.instances.clock_skew_max * 1000,
      now,
      gatewayDown,
    ),
    cron: await cronStatus(paths, config, reader, now, gatewayDown),
    platforms: await platformsStatus(paths, config, reader, now, gatewayDown),
    mcp: mcpComponent(paths, config, null, now),
  };
  if (outside === null) return report(paths, local);
  const seen = outside.health?.components ?? {};
  // The gateway's own component for what only it sees, when its /health has one.
  const said = <T extends Component>(name: (typeof GATEWAY_SEES)[number], mine: T): T => {
    const theirs = seen[name];
    return theirs === undefined ? mine : { ...mine, ...theirs };
  };
  return report(paths, {
    gateway: outside.gateway,
    // While both find the store well, this read's counts are the fresher (the gateway's layer
    // check runs every few seconds); any trouble the gateway's writer knows is its word.
    store:
      seen.store?.status === "ok" && local.store.status === "ok" ? local.store : said("store", local.store),
    providers: seen.providers
      ? providersComponent(
          paths,
          config,
          await providerRecords(config, reader, liveRecords(seen.providers)),
          now,
          await readBreakerRecords(reader),
        )
      : local.providers,
    credentials: local.credentials,
    compression: local.compression,
    scheduler: outside.scheduler,
    tools: local.tools,
    turns: local.turns,
    instances: said("instances", local.instances),
    cron: said("cron", local.cron),
    platforms: said("platforms", local.platforms),
    mcp: said("mcp", local.mcp),
    disk: said("disk", await localDisk(paths)),
  });
}

function report(paths: ProfilePaths, components: StatusReport["components"]): StatusReport {
  const levels = COMPONENT_NAMES.flatMap((name) => {
    const c = components[name];
    return c === undefined ? [] : [c.status];
  });
  return { profile: paths.name, status: worst(levels), components };
}

/** The disk as this process reads it, when the gateway did not say. */
async function localDisk(paths: ProfilePaths): Promise<Component & Record<string, unknown>> {
  try {
    return diskComponent(await readDisk(paths));
  } catch (error) {
    return {
      status: "degraded",
      detail: `${paths.dir} cannot be read for its free space: ${messageOf(error)}`,
      next: `check the disk under ${paths.dir} (df -h)`,
    };
  }
}

/**
 * The jobs as the store holds them, saying where the scheduler would run when no gateway does.
 * The gateway's own component, when it answers, has the scheduler's numbers too.
 */
async function cronStatus(
  paths: ProfilePaths,
  config: TenaxConfig,
  reader: StoreReads | null,
  now: number,
  gatewayDown: boolean,
): Promise<CronComponent> {
  const cron = await cronComponent(reader, now, null, {
    profile: paths.name,
    ...(config.cron.timezone ? { timezone: config.cron.timezone } : {}),
  });
  if (!gatewayDown || cron.enabled === 0) return cron;
  return {
    ...cron,
    detail: `${cron.detail}; no gateway runs, so nothing runs them: the scheduler runs only inside a gateway (${tenaxCommand(paths.name, ["up"])}) or with ${tenaxCommand(paths.name, ["cron", "tick"])}`,
  };
}

/** The chat platforms as the store's outbox shows them; nothing connects them while no gateway runs. */
async function platformsStatus(
  paths: ProfilePaths,
  config: TenaxConfig,
  reader: StoreReads | null,
  now: number,
  gatewayDown: boolean,
): Promise<PlatformsComponent> {
  const names = configuredPlatforms(config);
  let backlog: Record<string, OutboxBacklog> = {};
  try {
    if (reader !== null && names.length > 0) backlog = await readOutboxBacklog(reader, names, undefined, now);
  } catch {
    // A store that cannot be read is the store component's news.
  }
  return platformsComponent(paths, config, backlog, null, now, gatewayDown);
}

/** The exit code the contract gives each overall status. */
export function exitCodeFor(status: Level): number {
  return status === "ok" ? 0 : status === "degraded" ? 1 : 2;
}

/** The worst level among components; `unknown` counts as no fault. */
export function worst(levels: readonly ComponentLevel[]): Level {
  if (levels.includes("down")) return "down";
  return levels.includes("degraded") ? "degraded" : "ok";
}

/**
 * Each provider's record: the store's (every process that calls a provider writes it), merged with
 * the running gateway's live one when it said (its throttled writes may lag it by a few seconds).
 */
async function providerRecords(
  config: TenaxConfig,
  reader: StoreReads | null,
  live: ReadonlyMap<string, ProviderRecord> = new Map(),
): Promise<Map<string, ProviderRecord | null>> {
  const records = new Map<string, ProviderRecord | null>();
  for (const { provider } of configuredProviders(config)) {
    let stored: ProviderRecord | null = null;
    try {
      stored = reader ? await readProviderRecord(reader, provider) : null;
    } catch {
      // A store that cannot be read is the store component's news.
    }
    records.set(provider, mergeRecords(stored, live.get(provider) ?? null));
  }
  return records;
}

/** Each provider's record as the gateway's /health lists it; anything not shaped like one is left out. */
function liveRecords(component: ReportedComponent | undefined): Map<string, ProviderRecord> {
  const out = new Map<string, ProviderRecord>();
  const list = component?.providers;
  if (!Array.isArray(list)) return out;
  for (const entry of list as unknown[]) {
    const name = (entry as { provider?: unknown } | null)?.provider;
    const record = parseProviderRecord(entry);
    if (typeof name === "string" && record !== null) out.set(name, record);
  }
  return out;
}

async function readLedger(
  reader: StoreReads | null,
): Promise<{ states: CredentialState[]; problem: string | null }> {
  if (reader === null) return { states: [], problem: null };
  try {
    return { states: await reader.credentialStates(), problem: null };
  } catch (error) {
    return { states: [], problem: `the key ledger cannot be read (${messageOf(error)})` };
  }
}

/** A ledger that only reads what the store held when status looked. */
class SnapshotLedger implements CredentialStateStore {
  constructor(private readonly states: readonly CredentialState[]) {}
  async record(_p: string, _f: string, _u: CredentialUpdate): Promise<CredentialState> {
    throw new Error("status never writes the key ledger");
  }
  async get(provider: string): Promise<CredentialState[]> {
    return this.states.filter((s) => s.provider === provider);
  }
  async usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]> {
    const known = new Map((await this.get(provider)).map((s) => [s.fingerprint, s]));
    return fingerprints.filter((f) => isUsable(known.get(f), now));
  }
}

async function credentialsComponent(
  paths: ProfilePaths,
  config: TenaxConfig,
  states: CredentialState[],
  now: number,
): Promise<StatusReport["components"]["credentials"]> {
  const ledger = new SnapshotLedger(states);
  const providers: ProviderKeys[] = [];
  for (const [name, settings] of Object.entries(config.providers)) {
    const pool = new CredentialPool(name, settings.api_keys ?? null, { ledger });
    providers.push({
      provider: name,
      type: settings.type,
      base_url:
        settings.base_url ?? (settings.type === "simulator" ? null : DEFAULT_BASE_URLS[settings.type]),
      keyed: pool.keyed,
      keys: await pool.state(now),
    });
  }

  // Down when the primary and every fallback have no usable key: no model call can succeed.
  const usable = (provider: string) =>
    providers.find((p) => p.provider === provider)?.keys.some((k) => k.status === "ok") ?? true;
  const chain = [config.model, ...config.fallback].flatMap((t) => (t ? [t.provider] : []));
  const problems = providers.flatMap((p) =>
    p.keys
      .filter((k) => k.status !== "ok")
      .map(
        (k) =>
          `${p.provider} ${p.keyed ? `key ${k.position + 1} (${k.fingerprint})` : "(no key)"} ${describeKey(k, now)}`,
      ),
  );
  // A key cooling for one model only (a rate limit whose error named it): the provider's other models keep it.
  for (const p of providers) {
    const prefix = modelScope(p.provider, "");
    for (const s of states) {
      if (!s.provider.startsWith(prefix) || isUsable(s, now)) continue;
      const key = p.keys.find((k) => k.fingerprint === s.fingerprint);
      const left =
        s.cooldown_until === null ? "" : ` for ${formatDuration(Math.max(0, s.cooldown_until - now))} more`;
      problems.push(
        `${p.provider} key ${key ? key.position + 1 : "?"} (${s.fingerprint}) cooling down for ${s.provider.slice(prefix.length)} only after ${s.reason ?? "a failure"}${left}`,
      );
    }
  }
  const disabled = providers.some((p) => p.keys.some((k) => k.status === "disabled"));
  const next = disabled
    ? `replace the disabled key in ${paths.config} (or its .env); a new key starts fresh. Then: ${tenaxCommand(paths.name, ["status"])}`
    : problems.length > 0
      ? `cooling keys come back by themselves; watch with ${tenaxCommand(paths.name, ["status"])}`
      : null;
  const level: Level =
    chain.length > 0 && chain.every((p) => !usable(p)) ? "down" : problems.length > 0 ? "degraded" : "ok";
  return {
    status: level,
    detail:
      problems.length > 0
        ? problems.join("; ")
        : providers.length === 0
          ? "no keys needed (built-in simulator)"
          : allUsable(providers),
    next,
    providers,
  };
}

/** The keys when none is cooling or disabled, and the providers that need none, by name. */
function allUsable(providers: readonly ProviderKeys[]): string {
  const total = providers.reduce((n, p) => n + (p.keyed ? p.keys.length : 0), 0);
  const keyless = providers.filter((p) => !p.keyed).map((p) => p.provider);
  const parts = total > 0 ? [`${total} key${total === 1 ? "" : "s"}, all usable`] : [];
  if (keyless.length > 0)
    parts.push(`${keyless.join(", ")} need${keyless.length === 1 ? "s" : ""} no key (api_keys left out)`);
  return parts.join("; ");
}

function describeKey(key: PoolKeyState, now: number): string {
  if (key.status === "disabled") return `disabled after ${key.reason ?? "a failure"} until the key changes`;
  const left = key.cooldown_until === null ? null : Math.max(0, key.cooldown_until - now);
  return `cooling down after ${key.reason ?? "a failure"}${left === null ? "" : ` for ${formatDuration(left)} more`}`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
