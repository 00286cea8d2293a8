// Turns left "running" by a process that died: their lease has expired (nobody renews it), so
// they are marked interrupted, counted, and noted in the transcript, for people and for resume.
import type { Store } from "../store/store.js";
import { MARKER_ROLE } from "./history.js";

export interface ReapedTurn {
  turn_id: string;
  session_id: string;
  interrupt_count: number;
}

export async function reapDeadTurns(store: Store, now: number): Promise<ReapedTurn[]> {
  const reaped: ReapedTurn[] = [];
  for (const turn of store.runningTurns()) {
    if (turn.lease_expires_at === null || turn.lease_expires_at > now) continue;
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
        lease_owner: null,
        lease_expires_at: null,
        interrupt_count: count,
        error: "the process running this turn stopped (its lease expired)",
      },
    ]);
    reaped.push({ turn_id: turn.id, session_id: turn.session_id, interrupt_count: count });
  }
  return reaped;
}
