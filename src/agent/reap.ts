// Turns left "running" by a process that died: their lease has expired (nobody renews it), so
// they are marked interrupted, counted, and noted in the transcript, for people and for resume.
// When the caller can tell whether the owner process lives, a dead owner's turn is reaped at once:
// a restart right after a kill -9 need not wait out the lease. A reaped turn keeps its owner (with
// no lease), so a gateway that starts after a crash can tell the turns it ran from the others,
// whoever reaped them.

import { type Owners, ownerIsGone } from "../core/owners.js";
import { isLeaseLost } from "../store/lease-fence.js";
import type { StorePort } from "../store/port.js";
import type { TurnView } from "../store/rows.js";
import { MARKER_ROLE } from "./history.js";

export interface ReapedTurn {
  turn_id: string;
  session_id: string;
  interrupt_count: number;
}

export interface ReapOptions {
  /** Who holds leases and whether a holder has ended; without it only an expired lease counts. */
  owners?: Owners;
  /** Only these turns (the watchdog reaps what it has looked at, nothing else). */
  only?: ReadonlySet<string>;
  /** Turns this process gave up on with their row still running: dead whatever their lease says. */
  abandoned?: ReadonlySet<string>;
}

/** Whether nobody runs this turn any more: its lease ran out, or its owner is known to have ended. */
export function isDead(turn: TurnView, now: number, owners?: Owners): boolean {
  if (turn.lease_expires_at === null) return false;
  if (turn.lease_expires_at <= now) return true;
  // This process's own turns are alive while it runs ("mine" is never gone); the watchdog judges
  // them by the lease.
  return owners !== undefined && ownerIsGone(owners, turn.lease_owner);
}

export async function reapDeadTurns(
  store: StorePort,
  now: number,
  options: ReapOptions = {},
): Promise<ReapedTurn[]> {
  const reaped: ReapedTurn[] = [];
  for (const turn of await store.runningTurns()) {
    if (options.only && !options.only.has(turn.id)) continue;
    if (!options.abandoned?.has(turn.id) && !isDead(turn, now, options.owners)) continue;
    const count = turn.interrupt_count + 1;
    const since = turn.heartbeat_at ?? turn.started_at;
    if (await interrupt(store, turn, now, count, since)) {
      reaped.push({ turn_id: turn.id, session_id: turn.session_id, interrupt_count: count });
    }
  }
  return reaped;
}

/**
 * Mark one dead turn interrupted, at a new lease epoch: the owner, if it only stalled, has its late
 * writes refused (store/lease-fence.ts). Compared and set on the status and epoch read, so of two
 * processes reaping it at once one does; false when another did (or the turn moved on) first.
 */
async function interrupt(
  store: StorePort,
  turn: TurnView,
  now: number,
  count: number,
  since: number | null,
): Promise<boolean> {
  try {
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
        lease_epoch: turn.lease_epoch,
        expect_status: "running",
        new_epoch: true,
      },
    ]);
    return true;
  } catch (error) {
    if (isLeaseLost(error)) return false;
    throw error;
  }
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
