// The profile's instances as one health component (`instances`): each process that runs turns on
// the store (id, host, pid, alive or gone, started, last heartbeat, the chat platforms it holds,
// the turns its leases name) and this process's clock against the database's. The gateway judges
// liveness with its instance registry (store/instances.ts); a look from outside (`tenax status`
// with no gateway) with one look at the locks, or by heartbeats alone when it cannot see them.
// On SQLite there is no registry: one gateway per profile, shown as the only instance.
import { hostname } from "node:os";
import { TenaxError } from "../core/errors.js";
import type { OwnerState, Owners } from "../core/owners.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { InstanceView } from "../store/instance-types.js";
import { bystanderOwners, INSTANCE_TAG_PREFIX, type InstanceRegistry } from "../store/instances.js";
import type { StorePort, StoreReads } from "../store/port.js";
import type { TurnView } from "../store/rows.js";
import { formatDuration } from "./duration.js";
import type { Component, Level } from "./status.js";

/** unknown: a look from outside that cannot see the instance's lock (its heartbeat's age is shown). */
export type InstanceState = "alive" | "gone" | "unknown";

export interface InstanceRow {
  id: string;
  /** The owner tag its leases name it by: `inst:ID` (PostgreSQL), or `pid:N` (SQLite's one gateway). */
  tag: string;
  host: string;
  pid: number;
  state: InstanceState;
  /** The process that answered (the gateway whose /health this is). */
  self: boolean;
  started_at: number | null;
  /** The last heartbeat (the database's clock); null on SQLite, where none is written. */
  heartbeat_at: number | null;
  heartbeat_age_ms: number | null;
  stopped_at: number | null;
  version: string;
  /** The chat platforms it holds, when its row says (meta.platforms); null while not known. */
  platforms: string[] | null;
  /** Turns marked running whose lease names it. */
  turns_running: number;
  /** The last turn it took over from an instance gone; null while not known. */
  last_takeover: Record<string, unknown> | null;
  /** Its clock minus the database's (ms), as it measured and published it (meta.clock_skew_ms); null while not known. */
  clock_skew_ms: number | null;
}

export interface InstancesComponent extends Component {
  engine: "sqlite" | "postgres";
  /**
   * How liveness was told: the gateway's registry (locks, refreshed each heartbeat), one look at
   * the locks, heartbeats alone (the look could not see the locks), or the pid (SQLite).
   */
  judged_by: "registry" | "locks" | "heartbeats" | "process";
  instances: InstanceRow[];
  alive: number;
  gone: number;
  /** This process's clock minus the database's (ms), measured at its heartbeat; null: not measured here. */
  skew_ms: number | null;
  /** instances.clock_skew_max, in ms. */
  skew_max_ms: number;
}

/** Past this many times instances.clock_skew_max, the component is down and a gateway refuses to start. */
export const SKEW_REFUSE_FACTOR = 5;

/** What the gateway knows of itself as an instance. */
export interface GatewayInstances {
  /** The registry on a shared store (PostgreSQL); null on SQLite. */
  registry: InstanceRegistry | null;
  owners: Owners;
  /** When this gateway started (ms since the epoch). */
  startedAt: number;
}

interface Judged {
  paths: ProfilePaths;
  engine: InstancesComponent["engine"];
  judged_by: InstancesComponent["judged_by"];
  rows: InstanceRow[];
  skewMs: number | null;
  skewMaxMs: number;
  /** The registry's own trouble (a lost lock, a failed heartbeat), or null. */
  trouble?: string | null;
  /** What to say of an empty list. */
  none?: string;
}

/** The instances as the gateway sees them: its registry's snapshot, or itself alone on SQLite. */
export async function gatewayInstancesComponent(
  paths: ProfilePaths,
  store: StoreReads,
  self: GatewayInstances,
  skewMaxMs: number,
  now: number,
): Promise<InstancesComponent> {
  const turns = await runningTurns(store);
  const { registry, owners } = self;
  if (registry === null) {
    const row: InstanceRow = {
      id: owners.turnOwner,
      tag: owners.turnOwner,
      host: hostname(),
      pid: process.pid,
      state: "alive",
      self: true,
      started_at: self.startedAt,
      heartbeat_at: null,
      heartbeat_age_ms: null,
      stopped_at: null,
      version: "",
      platforms: null,
      turns_running: turns.filter((t) => t.lease_owner !== null && owners.state(t.lease_owner) === "mine")
        .length,
      last_takeover: null,
      clock_skew_ms: 0,
    };
    return judge({ paths, engine: "sqlite", judged_by: "process", rows: [row], skewMs: 0, skewMaxMs });
  }
  const skew = registry.skewMs();
  const dbNow = now - skew;
  const rows = registry.list().map((view) => rowOf(view, owners.state(tagOf(view)), dbNow, turns));
  const health = registry.health();
  const trouble =
    health.status === "ok" ? null : (health.detail ?? `this gateway's instance is ${health.status}`);
  return judge({ paths, engine: "postgres", judged_by: "registry", rows, skewMs: skew, skewMaxMs, trouble });
}

/**
 * The instances as a look from outside sees them (`tenax status`, the dashboard, with no gateway
 * answering): the rows the store holds, each judged by one look at the locks when the view can take
 * it, else by heartbeat age alone ("unknown", said honestly).
 */
export async function storeInstancesComponent(
  paths: ProfilePaths,
  reader: StoreReads | null,
  skewMaxMs: number,
  now: number,
  gatewayDown = false,
): Promise<InstancesComponent> {
  if (reader === null || reader.engine === "sqlite") {
    const none = gatewayDown
      ? "one gateway per profile on SQLite, and none runs now"
      : "one instance: the profile's one gateway (SQLite has no instance registry)";
    return judge({ paths, engine: "sqlite", judged_by: "process", rows: [], skewMs: null, skewMaxMs, none });
  }
  let listed: InstanceView[];
  try {
    listed = await reader.listInstances();
  } catch {
    // A store that cannot be read is the store component's news.
    return {
      ...judge({ paths, engine: "postgres", judged_by: "heartbeats", rows: [], skewMs: null, skewMaxMs }),
      status: "unknown",
      detail: "the instances cannot be read while the store cannot",
    };
  }
  const turns = await runningTurns(reader);
  const locks = withLocks(reader);
  if (locks === null) {
    const rows = listed.map((view) => rowOf(view, view.stopped_at !== null ? "gone" : "unknown", now, turns));
    return judge({ paths, engine: "postgres", judged_by: "heartbeats", rows, skewMs: null, skewMaxMs });
  }
  try {
    const owners = await bystanderOwners(locks, now);
    const dbNow = await locks
      .instances()
      .now()
      .catch(() => now);
    const rows = listed.map((view) => rowOf(view, owners.state(tagOf(view)), dbNow, turns));
    return judge({ paths, engine: "postgres", judged_by: "locks", rows, skewMs: null, skewMaxMs });
  } catch {
    const rows = listed.map((view) => rowOf(view, view.stopped_at !== null ? "gone" : "unknown", now, turns));
    return judge({ paths, engine: "postgres", judged_by: "heartbeats", rows, skewMs: null, skewMaxMs });
  }
}

/**
 * Why this gateway must not start: its clock is off from the database's by more than
 * SKEW_REFUSE_FACTOR times instances.clock_skew_max (measured at its first heartbeat); null when it
 * may (always on SQLite: one clock).
 */
export function clockSkewRefusal(registry: InstanceRegistry | null, skewMaxMs: number): TenaxError | null {
  if (registry === null) return null;
  const skew = registry.skewMs();
  if (Math.abs(skew) <= skewMaxMs * SKEW_REFUSE_FACTOR) return null;
  return new TenaxError(
    "clock_skew",
    `refusing to start: this host's clock is ${describeSkew(skew)} the database's, more than ${SKEW_REFUSE_FACTOR} times instances.clock_skew_max (${formatDuration(skewMaxMs)}); leases and heartbeats would be misjudged`,
    {
      hint: "set this host's clock right (NTP: `timedatectl status`, `chronyc tracking`) and start again",
      data: { skew_ms: skew, clock_skew_max_ms: skewMaxMs },
    },
  );
}

function tagOf(view: InstanceView): string {
  return `${INSTANCE_TAG_PREFIX}${view.id}`;
}

function rowOf(
  view: InstanceView,
  state: OwnerState,
  dbNow: number,
  turns: readonly TurnView[],
): InstanceRow {
  const tag = tagOf(view);
  const platforms = view.meta.platforms;
  return {
    id: view.id,
    tag,
    host: view.host,
    pid: view.pid,
    state: state === "mine" ? "alive" : state,
    self: state === "mine",
    started_at: view.started_at,
    heartbeat_at: view.heartbeat_at,
    heartbeat_age_ms: Math.max(0, dbNow - view.heartbeat_at),
    stopped_at: view.stopped_at,
    version: view.version,
    platforms:
      Array.isArray(platforms) && platforms.every((p) => typeof p === "string")
        ? (platforms as string[])
        : null,
    turns_running: turns.filter((t) => t.lease_owner === tag).length,
    last_takeover: isRecord(view.meta.last_takeover) ? view.meta.last_takeover : null,
    clock_skew_ms: typeof view.meta.clock_skew_ms === "number" ? view.meta.clock_skew_ms : null,
  };
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

async function runningTurns(store: StoreReads): Promise<TurnView[]> {
  try {
    return await store.runningTurns();
  } catch {
    return []; // a store that cannot be read is the store component's news
  }
}

/** The view's instance rows with their lock liveness, when it can take a look at the locks. */
function withLocks(reader: StoreReads): (StoreReads & Pick<StorePort, "instances">) | null {
  const candidate = reader as StoreReads & Partial<Pick<StorePort, "instances">>;
  if (typeof candidate.instances !== "function") return null;
  return candidate.instances().liveness === "lock"
    ? (candidate as StoreReads & Pick<StorePort, "instances">)
    : null;
}

/** "1.2 s ahead of" / "3 s behind". */
function describeSkew(skewMs: number): string {
  return `${(Math.abs(skewMs) / 1000).toFixed(1)} s ${skewMs >= 0 ? "ahead of" : "behind"}`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** One instance for people: "i_x (this gateway, host h, pid 1, 1 turn running, heartbeat 1 s ago)". */
function describeRow(row: InstanceRow, judgedBy: InstancesComponent["judged_by"]): string {
  const parts = [
    row.self ? "this gateway" : null,
    `host ${row.host}`,
    `pid ${row.pid}`,
    row.platforms === null || row.platforms.length === 0 ? null : `holds ${row.platforms.join(", ")}`,
    row.state === "gone"
      ? row.turns_running > 0
        ? `${plural(row.turns_running, "turn")} still marked running`
        : null
      : `${plural(row.turns_running, "turn")} running`,
    row.heartbeat_age_ms === null
      ? null
      : `${row.state === "gone" ? "last heartbeat" : "heartbeat"} ${formatDuration(row.heartbeat_age_ms)} ago`,
    row.state !== "unknown"
      ? null
      : judgedBy === "heartbeats"
        ? "its lock cannot be seen from here"
        : "its lock is not held, but it has not been silent long enough to be judged gone",
  ];
  return `${row.id} (${parts.filter((p) => p !== null).join(", ")})`;
}

/** The component's level, its one line and what to do, from the rows and the clock. */
function judge(input: Judged): InstancesComponent {
  const { rows, skewMs, skewMaxMs, paths } = input;
  const alive = rows.filter((r) => r.state === "alive");
  const gone = rows.filter((r) => r.state === "gone");
  const unknown = rows.filter((r) => r.state === "unknown");
  const listing =
    input.engine === "sqlite"
      ? rows.length === 0
        ? (input.none ?? "one gateway per profile on SQLite")
        : `one instance (SQLite: one gateway per profile): ${rows.map((r) => describeRow(r, input.judged_by)).join("; ")}`
      : rows.length === 0
        ? "no instance has registered with the store"
        : [
            `${alive.length} alive${unknown.length > 0 ? `, ${unknown.length} unknown` : ""}, ${gone.length} gone`,
            alive.length + unknown.length > 0
              ? `: ${[...alive, ...unknown].map((r) => describeRow(r, input.judged_by)).join("; ")}`
              : "",
            gone.length > 0 ? `; gone: ${gone.map((r) => describeRow(r, input.judged_by)).join("; ")}` : "",
          ].join("");
  const problems: { level: Level; detail: string; next: string }[] = [];
  if (skewMs !== null && Math.abs(skewMs) > skewMaxMs) {
    const self = rows.find((r) => r.self);
    const who = self ? `instance ${self.id} (this gateway, on ${self.host})` : "this gateway";
    const refused = Math.abs(skewMs) > skewMaxMs * SKEW_REFUSE_FACTOR;
    problems.push({
      level: refused ? "down" : "degraded",
      detail: `${who}: its clock is ${describeSkew(skewMs)} the database's, past instances.clock_skew_max (${formatDuration(skewMaxMs)})${refused ? `; past ${SKEW_REFUSE_FACTOR} times it a gateway refuses to start` : ""}`,
      next: `set this host's clock right (NTP: \`timedatectl status\`, \`chronyc tracking\`); instances.clock_skew_max is in ${paths.config}`,
    });
  }
  // Another instance's clock, as it published it: it is degraded there too, and refused at its start
  // past SKEW_REFUSE_FACTOR times the bound; shown here so one look finds the host to fix.
  for (const row of alive) {
    if (row.self || row.clock_skew_ms === null || Math.abs(row.clock_skew_ms) <= skewMaxMs) continue;
    problems.push({
      level: "degraded",
      detail: `instance ${row.id} (host ${row.host}, pid ${row.pid}): its clock is ${describeSkew(row.clock_skew_ms)} the database's, past instances.clock_skew_max (${formatDuration(skewMaxMs)})`,
      next: `set the clock of host ${row.host} right (NTP: \`timedatectl status\`, \`chronyc tracking\`)`,
    });
  }
  if (input.trouble) {
    problems.push({
      level: "degraded",
      detail: input.trouble,
      next: "the instance takes its lock and heartbeat again by itself once the database answers; the store component says whether it does",
    });
  }
  const level: Level = problems.some((p) => p.level === "down")
    ? "down"
    : problems.length > 0
      ? "degraded"
      : "ok";
  return {
    status: level,
    detail: [...problems.map((p) => p.detail), listing].join("; "),
    next: problems[0]?.next ?? null,
    engine: input.engine,
    judged_by: input.judged_by,
    instances: rows,
    alive: alive.length,
    gone: gone.length,
    skew_ms: skewMs,
    skew_max_ms: skewMaxMs,
  };
}
