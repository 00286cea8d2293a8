// Who holds a claim or a lease: "pid:N@START" of the process (its pid and its start time, so a
// reused pid is not taken for the holder), and whether that process still runs. Cron's run
// claims and the platform outbox's send leases carry one.
import { isRunning, selfIdentity } from "./process-identity.js";

const TAG = /^pid:(\d+)@(\d+)$/;

/** This process's tag; "pid:N" alone off Linux, where a process's start time is unknown. */
export function ownerOf(): string {
  const self = selfIdentity();
  return self === null ? `pid:${process.pid}` : `pid:${self.pid}@${self.start}`;
}

/** Whether the tagged process runs; false for a tag that names no process surely (no start). */
export function ownerAlive(owner: string): boolean {
  const match = TAG.exec(owner);
  if (!match) return false;
  return isRunning({ pid: Number(match[1]), start: Number(match[2]) });
}

/**
 * Whether the tagged process is known to have ended: a full tag whose process is gone. A tag
 * without a start (off Linux) is never taken for gone, so a lease it holds runs its course.
 */
export function ownerGone(owner: string): boolean {
  return TAG.test(owner) && !ownerAlive(owner);
}
