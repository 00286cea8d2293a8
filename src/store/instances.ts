// The instance registry: this process's row among the profile's running processes, kept alive by a
// heartbeat, and a snapshot of every instance refreshed on each one, so `gone(tag)` can answer
// synchronously whether the owner of a lease or claim has ended, on any host. On PostgreSQL an
// instance is alive while its advisory lock is held (pg-instance-lock.ts); on SQLite (one host)
// while its pid runs. The rule itself is instance-liveness.ts. Timers never throw: a failure is
// recorded and shown by health().
import { hostname } from "node:os";
import { backgroundTimers, type Clock, systemClock, type Timers } from "../core/deps.js";
import { newId } from "../core/ids.js";
import { localOwners, type OwnerState, type Owners, processState } from "../core/owners.js";
import {
  INSTANCE_ID_PREFIX,
  type InstanceSnapshot,
  instanceGone,
  type LivenessRule,
  processMeta,
  processRuns,
} from "./instance-liveness.js";
import type { InstanceLock, InstanceLockState, InstanceStore, InstanceView } from "./instance-types.js";
import type { StorePort } from "./port.js";

/** What the registry needs of a store: the registry's rows and their listing. */

/** How far an instance's measured clock skew moves before its row says the new one. */
export const SKEW_PUBLISH_STEP_MS = 250;
export type InstanceSource = Pick<StorePort, "instances" | "listInstances">;

/** The prefix of an owner tag naming an instance of the registry: "inst:ID". */
export const INSTANCE_TAG_PREFIX = "inst:";

export interface InstanceRegistryOptions {
  /** How often this instance beats and the snapshot is refreshed (default 2 s). */
  heartbeatMs?: number;
  /** A heartbeat older than this, with no lock held, is silence (default 15 s). */
  silentAfterMs?: number;
  /** Housekeeping: rows stopped or silent for longer than this are deleted (default 1 day). */
  pruneAfterMs?: number;
  /** How often housekeeping runs (default 1 hour; on start too). */
  pruneEveryMs?: number;
  /** PostgreSQL: while the lock is lost, how often it is taken again (default 1 s). */
  relockMs?: number;
  /** The Tenax version this process runs ("" when unknown). */
  version?: string;
  /** Free-form facts of this instance for its row (what it holds, what it serves). */
  meta?: Record<string, unknown>;
  host?: string;
  pid?: number;
  clock?: Clock;
  timers?: Timers;
  /** Told each change of this instance's lock (PostgreSQL): lost, held again, in conflict. */
  onLockChange?: (state: InstanceLockState, detail: string | null) => void;
  /** Whether the process of a row of this host runs (SQLite's rule); /proc by default. */
  processRuns?: (instance: InstanceView) => boolean;
}

export interface InstanceRegistryHealth {
  /** starting: start() not yet done; degraded: see detail; stopped: after stop(). */
  status: "starting" | "ok" | "degraded" | "stopped";
  id: string | null;
  liveness: InstanceStore["liveness"];
  /** PostgreSQL: where this instance's advisory lock stands; null on SQLite. */
  lock: InstanceLockState | null;
  /** Why it is degraded (the last failure, the lock's trouble), or null. */
  detail: string | null;
  /** The local time of the last refresh that completed, or null before the first. */
  refreshed_at: number | null;
  /** Refreshes failed in a row (0 when the last one completed). */
  failures: number;
  skew_ms: number;
  /** Our row was found gone or marked stopped by another process: others may take what we hold. */
  evicted: boolean;
}

/** How many times registration takes a new id when its row took too long to commit. */
const REGISTER_ATTEMPTS = 3;

export class InstanceRegistry {
  private readonly heartbeatMs: number;
  private readonly silentAfterMs: number;
  private readonly pruneAfterMs: number;
  private readonly pruneEveryMs: number;
  private readonly clock: Clock;
  private readonly timers: Timers;
  private readonly host: string;
  private readonly pid: number;
  private readonly rule: LivenessRule;
  private readonly rows: InstanceStore;
  private id: string | null = null;
  private lock: InstanceLock | null = null;
  private snapshot: InstanceSnapshot | null = null;
  private timer: unknown = null;
  private running: Promise<void> | null = null;
  private state: "new" | "starting" | "started" | "stopped" = "new";
  private meta: Record<string, unknown>;
  private metaChanged = false;
  private skew = 0;
  private refreshedAt: number | null = null;
  private failures = 0;
  private failure: string | null = null;
  private evicted = false;
  private prunedAt: number | null = null;

  constructor(
    private readonly store: InstanceSource,
    private readonly options: InstanceRegistryOptions = {},
  ) {
    this.heartbeatMs = options.heartbeatMs ?? 2_000;
    this.silentAfterMs = options.silentAfterMs ?? 15_000;
    this.pruneAfterMs = options.pruneAfterMs ?? 86_400_000;
    this.pruneEveryMs = options.pruneEveryMs ?? 3_600_000;
    this.clock = options.clock ?? systemClock;
    this.timers = options.timers ?? backgroundTimers;
    this.host = options.host ?? hostname();
    this.pid = options.pid ?? process.pid;
    this.meta = { ...options.meta, ...processMeta() };
    this.rows = store.instances();
    this.rule = {
      silentAfterMs: this.silentAfterMs,
      host: this.host,
      processRuns: options.processRuns ?? processRuns,
    };
  }

  /** This instance's owner tag, "inst:ID"; there is none before start() has resolved. */
  get self(): string {
    if (this.id === null || this.state === "starting")
      throw new Error("the instance registry is not started");
    return `${INSTANCE_TAG_PREFIX}${this.id}`;
  }

  /**
   * Register this process: take its id at the engine's clock, its lock first (PostgreSQL), so no
   * one ever sees its row without it, then its row, then the first refresh; heartbeats follow.
   * Rejects when the store cannot be reached (nothing of it is left behind).
   */
  async start(): Promise<string> {
    if (this.state !== "new") throw new Error("the instance registry was started already");
    this.state = "starting";
    try {
      for (let attempt = 1; ; attempt++) {
        if (await this.register()) break;
        if (attempt >= REGISTER_ATTEMPTS)
          throw new Error(
            `registering this instance took longer than ${this.silentAfterMs} ms ${attempt} times: the store is too slow to answer`,
          );
      }
    } catch (error) {
      this.state = "stopped";
      this.id = null;
      throw error;
    }
    if (this.state !== "starting") {
      // stop() was called meanwhile: undo the registration it could not see.
      await this.rows.stop(this.id ?? "").catch(() => undefined);
      await this.lock?.release();
      throw new Error("the instance registry was stopped while it started");
    }
    this.state = "started";
    await this.tick();
    return this.self;
  }

  /** One registration; false when its row committed too late for its id (see instanceGone). */
  private async register(): Promise<boolean> {
    const made = await this.rows.now();
    const id = newId(INSTANCE_ID_PREFIX, made);
    this.id = id;
    if (this.rows.liveness === "lock") {
      const lock = this.rows.lock(id, (state, detail) => this.options.onLockChange?.(state, detail), {
        retryMs: this.options.relockMs,
      });
      this.lock = lock;
      try {
        await lock.acquire();
      } catch (error) {
        await lock.release();
        this.lock = null;
        throw error;
      }
    }
    try {
      await this.rows.register({
        id,
        host: this.host,
        pid: this.pid,
        version: this.options.version ?? "",
        meta: this.meta,
      });
      if ((await this.rows.now()) - made <= this.silentAfterMs) return true;
      await this.rows.stop(id);
    } catch (error) {
      await this.rows.stop(id).catch(() => undefined);
      await this.lock?.release();
      this.lock = null;
      throw error;
    }
    await this.lock?.release();
    this.lock = null;
    return false;
  }

  /** Facts of this instance for its row, written with the next heartbeat. */
  setMeta(meta: Record<string, unknown>): void {
    this.meta = { ...meta, ...processMeta() };
    this.metaChanged = true;
  }

  /** Some facts of this instance for its row (the others kept), written with the next heartbeat. */
  mergeMeta(meta: Record<string, unknown>): void {
    this.setMeta({ ...this.meta, ...meta });
  }

  /**
   * Whether the owner a tag names is known to have ended. "inst:ID" tags are this registry's (the
   * rule in instance-liveness.ts, over the last snapshot; this instance is never gone to itself).
   * Any other tag is a process's ("pid:..."): on one host (SQLite) it keeps the meaning
   * core/owners.ts gives it; across hosts (PostgreSQL) it may name a process of another host, which
   * /proc here cannot see, so it is never taken for gone (its lease runs out instead).
   */
  gone(ownerTag: string): boolean {
    if (!ownerTag.startsWith(INSTANCE_TAG_PREFIX))
      return this.rows.liveness === "process" && processState(ownerTag) === "gone";
    const id = ownerTag.slice(INSTANCE_TAG_PREFIX.length);
    if (id === this.id) return false;
    return instanceGone(this.snapshot, id, this.rule);
  }

  /** This registry as the holders of leases and claims: every tag of this process is `inst:ID`. */
  owners(): Owners {
    const self = this.self;
    const state = (owner: string): OwnerState => {
      if (owner === self) return "mine";
      if (!owner.startsWith(INSTANCE_TAG_PREFIX))
        return this.rows.liveness === "process" ? processState(owner) : "unknown";
      return this.gone(owner) ? "gone" : "alive";
    };
    return { self, turnOwner: self, state, skewMs: () => this.skew };
  }

  /** Local clock minus the database's, measured at each heartbeat (0 on SQLite: one clock). */
  skewMs(): number {
    return this.skew;
  }

  /** Every instance as the last refresh read it, oldest first. */
  list(): InstanceView[] {
    return this.snapshot === null ? [] : [...this.snapshot.instances.values()];
  }

  health(): InstanceRegistryHealth {
    const lock = this.lock?.state ?? null;
    const lockTrouble = lock !== null && lock !== "held" && lock !== "released";
    const detail =
      this.failure ??
      (lockTrouble ? (this.lock?.detail ?? `this instance's lock is ${lock}`) : null) ??
      (this.evicted
        ? "this instance's row was removed or marked stopped by another process: others may take what it held"
        : null);
    const status =
      this.state === "stopped"
        ? "stopped"
        : this.state !== "started"
          ? "starting"
          : detail !== null
            ? "degraded"
            : "ok";
    return {
      status,
      id: this.id,
      liveness: this.rows.liveness,
      lock,
      detail,
      refreshed_at: this.refreshedAt,
      failures: this.failures,
      skew_ms: this.skew,
      evicted: this.evicted,
    };
  }

  /** Mark this instance stopped, let its lock go, stop the timers. */
  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    const wasStarted = this.state === "started";
    this.state = "stopped";
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    await this.running;
    if (wasStarted && this.id !== null) {
      // Stopped first, then unlocked: an observer never sees the row unstopped and unlocked twice.
      await this.rows.stop(this.id).catch((error: unknown) => this.failed("marking it stopped", error));
    }
    await this.lock?.release();
  }

  /** One heartbeat and refresh, then the next one armed; never throws. */
  private async tick(): Promise<void> {
    if (this.state !== "started") return;
    this.running = this.refresh().catch((error: unknown) => this.failed("the heartbeat", error));
    await this.running;
    this.running = null;
    if (this.state === "started") this.timer = this.timers.set(() => void this.tick(), this.heartbeatMs);
  }

  /**
   * Keep this instance's skew, and publish it in its row (meta.clock_skew_ms, with the next
   * heartbeat) when it moved by SKEW_PUBLISH_STEP_MS: the others show it, no instance judges itself alone.
   */
  private measuredSkew(skew: number): void {
    this.skew = skew;
    const published = this.meta.clock_skew_ms;
    if (typeof published !== "number" || Math.abs(published - skew) >= SKEW_PUBLISH_STEP_MS)
      this.mergeMeta({ clock_skew_ms: skew });
  }

  private failed(what: string, error: unknown): void {
    this.failures++;
    this.failure = `${what} failed: ${error instanceof Error ? error.message : String(error)}`;
  }

  private async refresh(): Promise<void> {
    const id = this.id;
    if (id === null) return;
    const meta = this.metaChanged ? this.meta : undefined;
    const before = this.clock.now();
    const beat = await this.rows.heartbeat(id, meta);
    const after = this.clock.now();
    if (meta !== undefined) this.metaChanged = false;
    this.evicted = beat === null;
    const at = beat ?? (await this.rows.now());
    if (beat !== null && this.rows.liveness === "lock")
      this.measuredSkew(Math.round((before + after) / 2 - beat));
    const listed = await this.store.listInstances();
    const instances = new Map(listed.map((i) => [i.id, i]));
    let holders: Set<string> | null = null;
    const misses = new Map<string, number>();
    if (this.rows.liveness === "lock") {
      const live = listed.filter((i) => i.stopped_at === null).map((i) => i.id);
      holders = await this.rows.lockHolders(live);
      for (const other of live) {
        if (holders.has(other)) continue;
        misses.set(other, (this.snapshot?.misses.get(other) ?? 0) + 1);
      }
    }
    this.snapshot = { at, instances, holders, misses };
    this.refreshedAt = this.clock.now();
    this.failures = 0;
    this.failure = null;
    await this.housekeeping();
  }

  /** Delete rows stopped or silent for long, now and then; a failure only waits for the next time. */
  private async housekeeping(): Promise<void> {
    const now = this.clock.now();
    if (this.prunedAt !== null && now - this.prunedAt < this.pruneEveryMs) return;
    this.prunedAt = now;
    await this.rows.prune(this.pruneAfterMs).catch(() => undefined);
  }
}

/**
 * Owners as a process that runs no turns sees them (`tenax sessions stop`): one look at the
 * instances, without registering. On one host, this host's processes; on a shared store, an
 * instance is gone when marked stopped, or when its lock is not held and it has been silent
 * longer than `silentAfterMs`, and a process tag (another host's, perhaps) is unknown.
 */
export async function bystanderOwners(
  store: Pick<StorePort, "instances" | "listInstances">,
  now: number,
  silentAfterMs = 15_000,
): Promise<Owners> {
  const local = localOwners();
  const rows = store.instances();
  if (rows.liveness === "process") return local;
  const listed = await store.listInstances();
  const instances = new Map(listed.map((i) => [i.id, i]));
  const holders = await rows.lockHolders(listed.map((i) => i.id));
  const dbNow = await rows.now().catch(() => now);
  const state = (owner: string): OwnerState => {
    if (!owner.startsWith(INSTANCE_TAG_PREFIX)) return "unknown";
    const instance = instances.get(owner.slice(INSTANCE_TAG_PREFIX.length));
    if (instance === undefined) return "unknown";
    if (instance.stopped_at !== null) return "gone";
    if (holders.has(instance.id)) return "alive";
    return dbNow - instance.heartbeat_at > silentAfterMs ? "gone" : "unknown";
  };
  return { self: local.self, turnOwner: local.turnOwner, state, skewMs: () => now - dbNow };
}
