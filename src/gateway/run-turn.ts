// A run's turn as the store knows it: which of its session's turns is the run's (also when the
// process stopped before the run's `turn_started` was committed), and how a run ends whose turn
// stopped without the process that ran it (from the turn's stored status). Reads only.
import type { StorePort } from "../store/port.js";
import type { TurnView } from "../store/rows.js";
import { storedError } from "./run-outcomes.js";
import type { RunOutcome, RunState } from "./run-records.js";

/**
 * The run's turn id. When the process stopped after the run was committed but before its
 * `turn_started` event was, the record has no turn id: the run's turn is then the session's
 * first turn started at or after the run's turn started (its launch started the session's next
 * turn then); a run still queued never had a turn.
 */
export async function runTurnId(store: StorePort, run: RunState): Promise<string | null> {
  if (run.turn_id !== null) return run.turn_id;
  if (run.status === "queued") return null;
  const since = run.started_at ?? run.created_at;
  const after = (await store.getTurns(run.session_id))
    .filter((t) => t.started_at !== null && t.started_at >= since)
    .sort((a, b) => (a.started_at ?? 0) - (b.started_at ?? 0));
  return after[0]?.id ?? null;
}

/** The run's turn as stored; undefined when it never had one. */
export async function runTurn(store: StorePort, run: RunState): Promise<TurnView | undefined> {
  const turnId = await runTurnId(store, run);
  return turnId === null ? undefined : (await store.getTurns(run.session_id)).find((t) => t.id === turnId);
}

/** How a run whose turn stopped without its process ends: the turn's stored status. */
export async function storedTurnOutcome(store: StorePort, run: RunState): Promise<RunOutcome> {
  const turn = await runTurn(store, run);
  if (!turn)
    return {
      status: "failed",
      reply: run.reply,
      partial: true,
      error: storedError(
        "not_started",
        "unavailable_error",
        "the gateway stopped before the run's turn started",
        "submit it again",
      ),
    };
  if (turn.status === "completed") {
    const answer = (await store.getMessages(run.session_id))
      .filter((m) => m.turn_id === turn.id && m.role === "assistant" && m.content !== null)
      .at(-1);
    return { status: "completed", reply: answer?.content ?? run.reply, partial: false, error: null };
  }
  return { status: endedStatus(turn), reply: run.reply, partial: true, error: endedError(turn) };
}

function endedStatus(turn: TurnView): "failed" | "suspended" | "interrupted" {
  return turn.status === "failed" || turn.status === "suspended" ? turn.status : "interrupted";
}

/** Only the turn's message is stored with it; its code says how it ended. */
function endedError(turn: TurnView): RunOutcome["error"] {
  const message =
    turn.error ?? `the gateway stopped while the run's turn was running (turn ${turn.id} is ${turn.status})`;
  const status = endedStatus(turn);
  if (status === "failed")
    return storedError(
      "turn_failed",
      "server_error",
      message,
      "submit it again; the message says what failed",
    );
  if (status === "suspended")
    return storedError("suspended", "unavailable_error", message, "submit it again to start over");
  return storedError("interrupted", "unavailable_error", message, "submit it again to start over");
}
