// How a cron run's turn ended, read from the store: for a turn resumed after a crash (its end is
// told by an event that carries no reply) and for runs settled after their process stopped.
import type { StoreReads } from "../store/port.js";
import type { CronTurnResult } from "./host.js";

export interface OutcomeOptions {
  /**
   * Settling a run whose process stopped: an interrupted turn counts as its end (the gateway has
   * already resumed what it resumes). Without it, such a turn may still be resumed: null.
   */
  settling?: boolean;
}

/** The turn's stored end; null while it runs (or, unless settling, may still be resumed). */
export async function storedOutcome(
  store: Pick<StoreReads, "getTurns" | "getMessages">,
  sessionId: string,
  turnId: string | null,
  options: OutcomeOptions = {},
): Promise<CronTurnResult | null> {
  const turns = await store.getTurns(sessionId);
  const turn = turnId === null ? turns[0] : turns.find((t) => t.id === turnId);
  if (!turn) {
    if (!options.settling) return null;
    return {
      turn_id: turnId ?? "",
      status: "interrupted",
      reply: "",
      error: "its process stopped before the run's turn started",
      error_code: "interrupted",
    };
  }
  if (turn.status === "running") return null;
  if (turn.status === "interrupted" && !options.settling) return null;
  const answer = (await store.getMessages(sessionId))
    .filter((m) => m.turn_id === turn.id && m.role === "assistant" && m.content !== null)
    .at(-1);
  const reply = answer?.content ?? "";
  if (turn.status === "completed")
    return { turn_id: turn.id, status: "completed", reply, error: null, error_code: null };
  return {
    turn_id: turn.id,
    status: turn.status === "interrupted" ? "interrupted" : "failed",
    reply,
    error:
      turn.error ??
      (turn.status === "interrupted"
        ? "its process stopped while the run's turn ran, and the turn was not resumed"
        : `the turn ended ${turn.status}`),
    error_code:
      turn.status === "suspended"
        ? "suspended"
        : turn.status === "interrupted"
          ? "interrupted"
          : "turn_failed",
  };
}
