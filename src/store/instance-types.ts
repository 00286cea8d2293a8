// The instance registry's vocabulary at the port: one row per running process of the profile (an
// instance), what each engine offers to keep it (instances()), and how a row read back is checked.
// The registry itself, and the rule that says an instance is gone, are instances.ts.
import { checkTime } from "./rows.js";

/** One process of the profile as its row says; times in ms (the database's clock on PostgreSQL). */
export interface InstanceView {
  id: string;
  host: string;
  pid: number;
  started_at: number;
  /** The last heartbeat; 0 when the row holds no valid time (it counts as long silent). */
  heartbeat_at: number;
  /** When it said it stopped, or null while it runs (or died without saying). */
  stopped_at: number | null;
  /** The Tenax version it runs, or "". */
  version: string;
  /** Free-form: what the instance says of itself (what it holds, how to tell its process). */
  meta: Record<string, unknown>;
  warnings: string[];
}

export interface NewInstance {
  id: string;
  host: string;
  pid: number;
  version: string;
  meta: Record<string, unknown>;
}

/** Where an instance's liveness lock stands (PostgreSQL), as its holder sees it. */
export type InstanceLockState =
  /** Taking it for the first time. */
  | "acquiring"
  | "held"
  /** Its connection broke (a database restart, the network): being taken again. */
  | "lost"
  /** Another session holds it (a session of ours the server has not yet ended): tried again. */
  | "conflict"
  | "released";

/** An instance's lock held on a connection of its own, so pool churn never drops it. */
export interface InstanceLock {
  readonly state: InstanceLockState;
  /** Why it is not held (the connection's error, who holds it), or null when it is. */
  readonly detail: string | null;
  /** Take it the first time; rejects when the database cannot be reached or another holds it. */
  acquire(): Promise<void>;
  /** Let it go and close its connection; nothing is taken again after this. */
  release(): Promise<void>;
}

/** Where a named lock stands for one contender: only one process of the profile holds it at a time. */
export type NamedLockState =
  /** The first attempt has not ended. */
  | "trying"
  | "held"
  /** Not held: another instance holds it, or the database cannot be reached; tried again. */
  | "standby"
  | "released";

/**
 * A leadership lock by name (`platforms`): tried, never waited on. While not held it is tried
 * again every second or so, and taken within that once its holder's process ends.
 */
export interface NamedLock {
  readonly name: string;
  readonly state: NamedLockState;
  /** The owner tag of its holder ("inst:ID"; this process's own when held), or null when unknown. */
  readonly holder: string | null;
  /** Why it is not held (who holds it, the connection's error), or null when it is. */
  readonly detail: string | null;
  /** Try it now, and keep trying while it is not held; resolves after the first attempt, never rejects. */
  start(): Promise<void>;
  /** Let it go (another process may take it at once); nothing is tried after this. */
  release(): Promise<void>;
}

export interface NamedLockOptions {
  /** This process's owner tag, shown to the other contenders as the holder. */
  self: string;
  /** Told each change: held, lost (standby), held by someone else now. */
  onChange(lock: NamedLock): void;
  /** While not held, how often it is tried (and, while held, its connection checked); default 1 s. */
  retryMs?: number;
}

/** The rows of the registry, written directly (never operations: a heartbeat is not replayable). */
export interface InstanceRows {
  /** The engine's clock (the database's on PostgreSQL), ms since the epoch. */
  now(): Promise<number>;
  /** Insert (or re-insert) an instance's row; returns its started_at (the engine's clock). */
  register(instance: NewInstance): Promise<number>;
  /**
   * Note the instance alive now (and its meta, when given); returns the engine's time of it, or
   * null when its row is gone or marked stopped (another process pruned or stopped it).
   */
  heartbeat(id: string, meta?: Record<string, unknown>): Promise<number | null>;
  /** Mark it stopped (once; a second call keeps the first time). */
  stop(id: string): Promise<void>;
  /** Housekeeping: delete instances stopped, or silent, for longer than `olderThanMs`; their ids. */
  prune(olderThanMs: number): Promise<string[]>;
  /**
   * The leadership lock named `name`, one per profile. PostgreSQL: a session advisory lock on a
   * connection of its own, tried by every instance. SQLite: one gateway per profile, so it is
   * always this process's.
   */
  namedLock(name: string, options: NamedLockOptions): NamedLock;
}

/** SQLite: one host, so a process is alive while its pid runs (core/process-identity.ts). */
export interface ProcessLiveness extends InstanceRows {
  readonly liveness: "process";
}

/** PostgreSQL: any number of hosts, so an instance is alive while its session advisory lock is held. */
export interface LockLiveness extends InstanceRows {
  readonly liveness: "lock";
  /** The ids among `ids` whose lock some session holds now, all in one query. */
  lockHolders(ids: readonly string[]): Promise<Set<string>>;
  /** The lock of `id`, on a new dedicated connection; `onChange` hears each change of its state. */
  lock(
    id: string,
    onChange: (state: InstanceLockState, detail: string | null) => void,
    options?: { retryMs?: number },
  ): InstanceLock;
}

export type InstanceStore = ProcessLiveness | LockLiveness;

/** Columns in the order both engines select them. */
export const INSTANCE_COLUMNS = "id, host, pid, started_at, heartbeat_at, stopped_at, version, meta";

/** A row as read back, checked: an odd value becomes a warning, never a failed listing. */
export function toInstanceView(row: Record<string, unknown>): InstanceView {
  const warnings: string[] = [];
  const str = (raw: unknown) => (typeof raw === "string" ? raw : raw == null ? "" : String(raw));
  let meta: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(str(row.meta) || "{}");
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      meta = parsed as Record<string, unknown>;
    else warnings.push("meta is not a JSON object");
  } catch {
    warnings.push("meta is not valid JSON");
  }
  return {
    id: str(row.id),
    host: str(row.host),
    pid: typeof row.pid === "number" ? row.pid : Number(row.pid ?? 0),
    started_at: checkTime(row.started_at, "started_at", warnings) ?? 0,
    heartbeat_at: checkTime(row.heartbeat_at, "heartbeat_at", warnings) ?? 0,
    stopped_at: checkTime(row.stopped_at, "stopped_at", warnings, true),
    version: str(row.version),
    meta,
    warnings,
  };
}
