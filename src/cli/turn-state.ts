// What became of a session's last turn, as `tenax sessions list` shows it: a turn that was
// resumed after a crash keeps its id, so its interruptions are counted on the same row.
import type { TurnView } from "../store/rows.js";

export type TurnState = "running" | "completed" | "resumed" | "suspended" | "failed" | "interrupted";

export interface LastTurn {
  id: string;
  /** The stored status (running, completed, interrupted, failed, suspended). */
  status: string;
  /** resumed: running or completed after interruptions (crashes) it was resumed from. */
  state: TurnState | string;
  interrupt_count: number;
}

export function lastTurn(turns: readonly TurnView[]): LastTurn | null {
  const turn = turns.at(-1);
  if (!turn) return null;
  const resumed = turn.interrupt_count > 0 && (turn.status === "running" || turn.status === "completed");
  return {
    id: turn.id,
    status: turn.status,
    state: resumed ? "resumed" : turn.status,
    interrupt_count: turn.interrupt_count,
  };
}

/** One short cell: "completed", "resumed (completed after 1 interruption)", "suspended after 3 interruptions". */
export function describeLastTurn(turn: LastTurn | null): string {
  if (turn === null) return "";
  const n = turn.interrupt_count;
  const times = `${n} interruption${n === 1 ? "" : "s"}`;
  if (turn.state === "resumed") return `resumed (${turn.status} after ${times})`;
  if (turn.state === "suspended") return `suspended after ${times}`;
  return turn.state;
}
