// `tenax status` as data: each layer of a profile, read without starting anything (the store
// read-only, the key ledger from it, config as loaded), with a status, one line for people, and
// the command that fixes or diagnoses it. Works whether or not any Tenax process is running.
import { existsSync } from "node:fs";
import { readCooldown } from "../agent/compression-state.js";
import type { TenaxConfig } from "../config/schema.js";
import { TenaxError } from "../core/errors.js";
import { CredentialPool, type PoolKeyState } from "../llm/credential-pool.js";
import { mergeRecords, type ProviderRecord, readProviderRecord } from "../llm/provider-state.js";
import { DEFAULT_BASE_URLS } from "../llm/runtime.js";
import { type PlatformBacklog, readBacklog } from "../platforms/outbox-backlog.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import {
  type CredentialState,
  type CredentialStateStore,
  type CredentialUpdate,
  isUsable,
} from "../store/credential-ledger.js";
import { recoverCommand } from "../store/open-database.js";
import { openReader } from "../store/registry.js";
import { readSpool } from "../store/spool.js";
import type { StoreReader } from "../store/store-reader.js";
import { type CronComponent, cronComponent } from "./cron-component.js";
import { formatDuration } from "./duration.js";
import type { OutsideView } from "./gateway-status.js";
import { configuredPlatforms, type PlatformsComponent, platformsComponent } from "./platforms-component.js";
import { configuredProviders, type ProvidersComponent, providersComponent } from "./provider-component.js";
import { type ToolsComponent, toolsComponent } from "./tools-component.js";

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
    store: Component & {
      sessions: number | null;
      messages: number | null;
      spooled_writes: number;
      /** A read met damage in state.db (not a lock or a missing file): the writer must stop too. */
      damaged?: boolean;
    };
    providers: ProvidersComponent;
    credentials: Component & { providers: ProviderKeys[] };
    compression: Component & { enabled: boolean; failures: number; cooldown_until: number | null };
    /** The exec policy, the file roots and the approvals waiting. */
    tools: ToolsComponent;
    /** The cron jobs: the running gateway's view when it answers, else the store's alone. */
    cron: CronComponent;
    /** The chat platforms: the running gateway's view when it answers, else the store's outbox alone. */
    platforms: PlatformsComponent;
    /** From outside the gateway (pid file, port): present when the caller probed it. */
    gateway?: OutsideView["gateway"];
    scheduler?: OutsideView["scheduler"];
  };
}

export interface StatusInput {
  paths: ProfilePaths;
  config: TenaxConfig;
  /** null when the profile has no store yet, or when it could not be opened (`readerError`). */
  reader: StoreReader | null;
  /** Why the store could not be opened read-only (damage, another owner, a newer schema...). */
  readerError?: unknown;
  now: number;
  /** Probe the gateway and its scheduler from outside too (`tenax status` does; the gateway itself does not). */
  gateway?: () => Promise<OutsideView>;
  /**
   * Known elsewhere that no gateway answers (the dashboard's probe), without probing here: the chat
   * platforms are then down, as nothing connects them.
   */
  gatewayDown?: boolean;
}

export async function collectStatus(input: StatusInput): Promise<StatusReport> {
  const { paths, config, reader, now } = input;
  const ledger = readLedger(reader);
  // The gateway's live view first: its throttled writes to the store may lag it by a few seconds.
  const outside = input.gateway ? await input.gateway() : null;
  const store = withGatewayStore(storeComponent(paths, reader, input.readerError), outside);
  const providers = providersComponent(paths, config, providerRecords(config, reader, outside), now);
  const credentials = await credentialsComponent(paths, config, ledger.states, now);
  if (ledger.problem) {
    credentials.status = worst([credentials.status, "degraded"]);
    credentials.detail = `${ledger.problem}; ${credentials.detail}`;
  }
  const compression = compressionComponent(config, reader, now);
  const tools = toolsComponent(paths, config, reader, now);
  const cron = cronStatus(paths, config, reader, now, outside);
  const platforms = platformsStatus(paths, config, reader, now, outside, input.gatewayDown === true);
  const components: StatusReport["components"] = outside
    ? {
        gateway: outside.gateway,
        store,
        providers,
        credentials,
        compression,
        tools,
        cron,
        platforms,
        scheduler: outside.scheduler,
      }
    : { store, providers, credentials, compression, tools, cron, platforms };
  return { profile: paths.name, status: worst(Object.values(components).map((c) => c.status)), components };
}

/**
 * The gateway's own cron component when it answered (it holds the scheduler's numbers); else the
 * same rules over the store alone, saying where the scheduler would run.
 */
function cronStatus(
  paths: ProfilePaths,
  config: TenaxConfig,
  reader: StoreReader | null,
  now: number,
  outside: OutsideView | null,
): CronComponent {
  if (outside?.cron) return outside.cron;
  const cron = cronComponent(reader, now, null, {
    profile: paths.name,
    ...(config.cron.timezone ? { timezone: config.cron.timezone } : {}),
  });
  if (outside === null || outside.gateway.status !== "down" || cron.enabled === 0) return cron;
  return {
    ...cron,
    detail: `${cron.detail}; no gateway runs, so nothing runs them: the scheduler runs only inside a gateway (${tenaxCommand(paths.name, ["up"])}) or with ${tenaxCommand(paths.name, ["cron", "tick"])}`,
  };
}

/** The gateway's own platforms component when it answered (it knows the connections); else the store's outbox. */
function platformsStatus(
  paths: ProfilePaths,
  config: TenaxConfig,
  reader: StoreReader | null,
  now: number,
  outside: OutsideView | null,
  gatewayDown: boolean,
): PlatformsComponent {
  if (outside?.platforms) return outside.platforms;
  const names = configuredPlatforms(config);
  let backlog: Record<string, PlatformBacklog> = {};
  try {
    if (reader !== null && names.length > 0) backlog = readBacklog(reader, names, undefined, now);
  } catch {
    // A store that cannot be read is the store component's news.
  }
  return platformsComponent(
    paths,
    config,
    backlog,
    null,
    now,
    gatewayDown || outside?.gateway.status === "down",
  );
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

/** Each provider's record: the store's, merged with the running gateway's when it said. */
function providerRecords(
  config: TenaxConfig,
  reader: StoreReader | null,
  outside: OutsideView | null,
): Map<string, ProviderRecord | null> {
  const records = new Map<string, ProviderRecord | null>();
  for (const { provider } of configuredProviders(config)) {
    let stored: ProviderRecord | null = null;
    try {
      stored = reader ? readProviderRecord(reader, provider) : null;
    } catch {
      // A store that cannot be read is the store component's news.
    }
    records.set(provider, mergeRecords(stored, outside?.providers?.get(provider) ?? null));
  }
  return records;
}

function storeComponent(
  paths: ProfilePaths,
  reader: StoreReader | null,
  openError: unknown,
): StatusReport["components"]["store"] {
  const spooled = existsSync(paths.spool) ? readSpool(paths.spool).records.length : 0;
  if (openError !== undefined) return unreadableStore(paths, openError, "opened", spooled);
  const spoolNote =
    spooled > 0
      ? {
          status: "degraded" as const,
          detail: `${spooled} writes wait in ${paths.spool}`,
          next: recoverCommand(paths.state, paths.name),
        }
      : null;
  if (reader === null) {
    return {
      status: spoolNote ? "degraded" : "ok",
      detail: spoolNote?.detail ?? `no store yet; ${paths.state} is created on first use`,
      next: spoolNote?.next ?? null,
      sessions: null,
      messages: null,
      spooled_writes: spooled,
    };
  }
  try {
    const stats = reader.stats();
    const base = `${stats.path}: ${stats.sessions} sessions, ${stats.messages} messages`;
    return {
      status: spoolNote ? "degraded" : "ok",
      detail: spoolNote ? `${base}; ${spoolNote.detail}` : base,
      next: spoolNote?.next ?? null,
      sessions: stats.sessions,
      messages: stats.messages,
      spooled_writes: spooled,
    };
  } catch (error) {
    return unreadableStore(paths, error, "read", spooled);
  }
}

/**
 * The gateway's writer may know the store is down while every read here still works (damage its
 * page check found in pages no read touches, a failed sync): its word wins, and the local read
 * keeps what it counted.
 */
function withGatewayStore(
  local: StatusReport["components"]["store"],
  outside: OutsideView | null,
): StatusReport["components"]["store"] {
  const down = outside?.storeDown;
  if (down === undefined || local.status === "down") return local;
  return {
    ...local,
    status: "down",
    detail: `the gateway says: ${down.detail}`,
    next: down.next ?? local.next,
  };
}

/** A store that cannot be opened or read: down, and `damaged` when that is damage in the file. */
function unreadableStore(
  paths: ProfilePaths,
  error: unknown,
  what: "opened" | "read",
  spooled: number,
): StatusReport["components"]["store"] {
  return {
    status: "down",
    damaged: TenaxError.isInstance(error) && error.code === "store_corrupt",
    detail: `${paths.state} cannot be ${what}: ${messageOf(error)}`,
    next: TenaxError.isInstance(error) && error.hint ? error.hint : recoverCommand(paths.state, paths.name),
    sessions: null,
    messages: null,
    spooled_writes: spooled,
  };
}

/**
 * Open the store read-only for a status look, or say why it cannot be: a store that cannot even
 * be opened (damage in its header, another owner, a newer schema) is the store layer's news, not
 * a failed status.
 */
export function openForStatus(paths: ProfilePaths): { reader: StoreReader | null; readerError?: unknown } {
  if (!existsSync(paths.state)) return { reader: null };
  try {
    return { reader: openReader(paths) };
  } catch (error) {
    return { reader: null, readerError: error };
  }
}

/** The summarizer is a dependency of its own: a failing one cools down, and status says until when. */
function compressionComponent(
  config: TenaxConfig,
  reader: StoreReader | null,
  now: number,
): StatusReport["components"]["compression"] {
  const enabled = config.compression.enabled;
  let cooldown: ReturnType<typeof readCooldown> = null;
  try {
    cooldown = reader ? readCooldown(reader) : null;
  } catch {
    // A store that cannot be read is the store component's news.
  }
  if (cooldown !== null && cooldown.cooldown_until > now) {
    return {
      status: "degraded",
      detail: `the summarizer failed ${cooldown.failures} time${cooldown.failures === 1 ? "" : "s"} in a row (${cooldown.last_error}); automatic compression waits ${formatDuration(cooldown.cooldown_until - now)} more`,
      next: "check the auxiliary compression model in config.yaml; a provider-proven overflow still gets one attempt",
      enabled,
      failures: cooldown.failures,
      cooldown_until: cooldown.cooldown_until,
    };
  }
  return {
    status: "ok",
    detail: enabled
      ? `on at ${Math.round(config.compression.threshold * 100)}% of the window${
          config.auxiliary.compression
            ? `, summarizer ${config.auxiliary.compression.provider}/${config.auxiliary.compression.name}`
            : ", summarized by the primary model"
        }`
      : "off (compression.enabled: false)",
    next: null,
    enabled,
    failures: cooldown?.failures ?? 0,
    cooldown_until: null,
  };
}

function readLedger(reader: StoreReader | null): { states: CredentialState[]; problem: string | null } {
  if (reader === null) return { states: [], problem: null };
  try {
    return { states: reader.credentialStates(), problem: null };
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
