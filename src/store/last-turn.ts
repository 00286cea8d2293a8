// What became of a session's last turn, as every listing shows it (`tenax sessions list`, the
// dashboard, the gateway's /api/sessions): a turn that was resumed after a crash keeps its id, so
// its interruptions are counted on the same row.

export type TurnState = "running" | "completed" | "resumed" | "suspended" | "failed" | "interrupted";

export interface LastTurn {
  id: string;
  /** The stored status (running, completed, interrupted, failed, suspended). */
  status: string;
  /** resumed: running or completed after interruptions (crashes) it was resumed from. */
  state: TurnState | string;
  interrupt_count: number;
  /** Why it failed or was interrupted, in the turn's own words (cut to ERROR_MAX_CHARS); else null. */
  error: string | null;
}

/** The longest error a listing carries; the transcript's marker message has the whole of it. */
export const ERROR_MAX_CHARS = 300;

export function lastTurn(
  turn: { id: string; status: string; interrupt_count: number; error: string | null } | null,
): LastTurn | null {
  if (turn === null) return null;
  const resumed = turn.interrupt_count > 0 && (turn.status === "running" || turn.status === "completed");
  return {
    id: turn.id,
    status: turn.status,
    state: resumed ? "resumed" : turn.status,
    interrupt_count: turn.interrupt_count,
    error: turn.error === null ? null : turn.error.slice(0, ERROR_MAX_CHARS),
  };
}
