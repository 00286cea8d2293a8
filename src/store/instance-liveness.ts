// The rule that says an instance of the profile is gone, over what the registry last read (its
// snapshot). Pure: the registry (instances.ts) keeps the snapshot, this decides from it, so the
// rule is tested on made-up rows. What every answer rests on is written beside each branch.
import { idTime } from "../core/ids.js";
import { bootId, identify, isRunning, selfIdentity } from "../core/process-identity.js";
import type { InstanceView } from "./instance-types.js";

/** Instance ids: "i_" and a newId made at the engine's clock (the database's on PostgreSQL). */
export const INSTANCE_ID_PREFIX = "i_";

/** What one completed refresh read. */
export interface InstanceSnapshot {
  /**
   * The engine's time at which the refresh began (its heartbeat), before it listed the rows: every
   * row committed before it is in `instances`.
   */
  at: number;
  instances: ReadonlyMap<string, InstanceView>;
  /** PostgreSQL: the ids whose advisory lock was held; null on SQLite (pids say it there). */
  holders: ReadonlySet<string> | null;
  /** PostgreSQL: how many refreshes in a row, this one included, saw each id without its lock. */
  misses: ReadonlyMap<string, number>;
}

/** A lock holder silent this long is taken for cut off (see instanceGone). */
export const PARTITION_SILENCE_MS = 30_000;

export interface LivenessRule {
  /** A heartbeat older than this (engine time) is silence. */
  silentAfterMs: number;
  /** This host's name: on SQLite only a pid of this host can be looked up. */
  host: string;
  /** Whether the process an instance's row names still runs (this host only). */
  processRuns(instance: InstanceView): boolean;
}

/**
 * Whether instance `id` is gone, by the snapshot:
 * - before any refresh completed nothing is known: never gone;
 * - an instance marked stopped is gone;
 * - PostgreSQL: gone when its advisory lock is not held AND either two refreshes in a row saw it
 *   without it (one alone may fall between a restart of the database and its taking the lock
 *   again) or its heartbeat is older than `silentAfterMs`. A held lock is alive while its holder
 *   beats; one silent for PARTITION_SILENCE_MS is cut off from the database (a partition the
 *   server has not noticed yet) or hung, and gone: its late writes are fenced by the lease epoch;
 * - SQLite (one host): gone when its pid no longer runs (with the pid's start time and the boot it
 *   belongs to, so a reused pid is not taken for it); a row of another host, by silence alone;
 * - an id the snapshot does not hold is gone only when it was made more than `silentAfterMs` before
 *   the snapshot began. The registry makes an id at the engine's clock and gives it out only once
 *   its row is committed within `silentAfterMs` of that time (else it takes another), so such an
 *   instance, were it alive, would be in the snapshot; a newer one may have registered since and
 *   is not judged until a refresh has read it. An id that is not an instance id is taken for old.
 */
export function instanceGone(snapshot: InstanceSnapshot | null, id: string, rule: LivenessRule): boolean {
  if (snapshot === null) return false;
  const instance = snapshot.instances.get(id);
  if (instance === undefined) {
    const made = idTime(id, INSTANCE_ID_PREFIX) ?? Number.NEGATIVE_INFINITY;
    return made < snapshot.at - rule.silentAfterMs;
  }
  if (instance.stopped_at !== null) return true;
  const silent = snapshot.at - instance.heartbeat_at > rule.silentAfterMs;
  if (snapshot.holders !== null) {
    // A held lock whose holder has not beaten for PARTITION_SILENCE_MS: cut off from the database
    // (a partition the server has not noticed yet) or hung. Its turns may be taken over: every
    // write it makes later is refused by the turn's lease epoch.
    if (snapshot.holders.has(id)) return snapshot.at - instance.heartbeat_at > PARTITION_SILENCE_MS;
    return (snapshot.misses.get(id) ?? 0) >= 2 || silent;
  }
  if (instance.host !== rule.host) return silent;
  return !rule.processRuns(instance);
}

/** What the registry writes in its row's meta to tell its process apart from a later one. */
export function processMeta(): Record<string, unknown> {
  const self = selfIdentity();
  const boot = bootId();
  return {
    ...(self === null ? {} : { proc_start: self.start }),
    ...(boot === null ? {} : { boot_id: boot }),
  };
}

/**
 * Whether the process of a row of this host runs: same pid, same start time, same boot. Where
 * /proc cannot say (off Linux), a pid that answers a signal counts as running.
 */
export function processRuns(instance: InstanceView): boolean {
  const boot = instance.meta.boot_id;
  if (typeof boot === "string") {
    const current = bootId();
    if (current !== null && current !== boot) return false;
  }
  const start = instance.meta.proc_start;
  if (typeof start === "number") return isRunning({ pid: instance.pid, start });
  if (selfIdentity() !== null) return identify(instance.pid) !== null;
  try {
    process.kill(instance.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
