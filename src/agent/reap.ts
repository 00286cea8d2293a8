// Turns left "running" by a process that died: their lease has expired (nobody renews it), so
// they are marked interrupted, counted, and noted in the transcript, for people and for resume.
// When the caller can tell whether the owner process lives, a dead owner's turn is reaped at once:
// a restart right after a kill -9 need not wait out the lease. A reaped turn keeps its owner (with
// no lease), so a gateway that starts after a crash can tell the turns it ran from the others,
// whoever reaped them.

import type { StorePort } from "../store/port.js";
import type { TurnView } from "../store/rows.js";
import { MARKER_ROLE } from "./history.js";

export interface ReapedTurn {
  turn_id: string;
  session_id: string;
  interrupt_count: number;
}

export interface ReapOptions {
  /** Whether process `pid` still runs; without it only an expired lease counts. */
  pidAlive?: (pid: number) => boolean;
  /** Only these turns (the watchdog reaps what it has looked at, nothing else). */
  only?: ReadonlySet<string>;
}

/** The pid of a lease owner written as "pid:N" (the only form Tenax writes), or null. */
export function ownerPid(owner: string | null): number | null {
  const match = /^pid:(\d+)$/.exec(owner ?? "");
  return match ? Number(match[1]) : null;
}

/** Whether nobody runs this turn any more: its lease ran out, or its owner process is gone. */
export function isDead(turn: TurnView, now: number, pidAlive?: (pid: number) => boolean): boolean {
  if (turn.lease_expires_at === null) return false;
  if (turn.lease_expires_at <= now) return true;
  const pid = ownerPid(turn.lease_owner);
  // This process's own turns are alive while it runs; the watchdog judges them by the lease.
  return pidAlive !== undefined && pid !== null && pid !== process.pid && !pidAlive(pid);
}

export async function reapDeadTurns(
  store: StorePort,
  now: number,
  options: ReapOptions = {},
): Promise<ReapedTurn[]> {
  const reaped: ReapedTurn[] = [];
  for (const turn of await store.runningTurns()) {
    if (options.only && !options.only.has(turn.id)) continue;
    if (!isDead(turn, now, options.pidAlive)) continue;
    const count = turn.interrupt_count + 1;
    const since = turn.heartbeat_at ?? turn.started_at;
    await store.write([
      store.messageOp({
        session_id: turn.session_id,
        role: MARKER_ROLE,
        content: `turn interrupted: the process running it stopped (last heartbeat ${
          since === null ? "unknown" : new Date(since).toISOString()
        }); the transcript up to here is kept`,
        turn_id: turn.id,
      }),
      {
        op: "turn.update",
        id: turn.id,
        status: "interrupted",
        ended_at: now,
        lease_expires_at: null,
        interrupt_count: count,
        error: "the process running this turn stopped (its lease expired)",
      },
    ]);
    reaped.push({ turn_id: turn.id, session_id: turn.session_id, interrupt_count: count });
  }
  return reaped;
}

/**
 * The turns a crashed gateway was running that another process (a `tenax chat` opened first) has
 * already marked interrupted: the next gateway resumes them as if it had reaped them itself.
 */
export async function reapedByOthers(
  store: StorePort,
  crashed: { pid: number; started_at: number },
  reapedHere: readonly ReapedTurn[],
): Promise<ReapedTurn[]> {
  const here = new Set(reapedHere.map((t) => t.turn_id));
  return (await store.interruptedTurnsOf(`pid:${crashed.pid}`, crashed.started_at))
    .filter((t) => !here.has(t.id))
    .map((t) => ({ turn_id: t.id, session_id: t.session_id, interrupt_count: t.interrupt_count }));
}
