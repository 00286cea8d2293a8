// A session runs one turn at a time, whichever process (or gateway, on a shared store) runs it. The
// rule is a partial unique index in each engine (`turns_one_running`: at most one row per session
// with status 'running'), so two processes that both saw the session free cannot both start (or
// resume) a turn in it: the second write is refused whole with code `turn_running` and changes
// nothing. Written once here; the engines (ops.ts, postgres/pg-ops.ts) only look up the turn that
// holds the session, in their own SQL, when their statement was refused.
import { TenaxError } from "../core/errors.js";
import { StoreError } from "./errors.js";

export const ONE_RUNNING_INDEX = "turns_one_running";

export const TURN_RUNNING = "turn_running";

/**
 * The index, and the data fix it needs first: where an earlier Tenax left several running turns in
 * one session, all but the newest are marked interrupted at a new lease epoch (so a holder that
 * still runs has its writes refused, as after the reaper's interrupt). `ROW_ORDER` tells apart two
 * turns started in the same millisecond (rowid on SQLite, row_no on PostgreSQL).
 */
export function oneRunningTurnSql(rowOrder: "rowid" | "row_no"): string {
  return `
      UPDATE turns SET status = 'interrupted', lease_expires_at = NULL, lease_epoch = lease_epoch + 1,
        error = 'a later turn of its session was running too; a session now runs one turn at a time'
      WHERE status = 'running' AND EXISTS (
        SELECT 1 FROM turns later
        WHERE later.session_id = turns.session_id AND later.status = 'running'
          AND (later.started_at > turns.started_at
            OR (later.started_at = turns.started_at AND later.${rowOrder} > turns.${rowOrder})));
      CREATE UNIQUE INDEX ${ONE_RUNNING_INDEX} ON turns(session_id) WHERE status = 'running';
  `;
}

/** The turn that holds a session, as the refusal names it. */
export interface RunningTurn {
  id: string;
  lease_owner: string | null;
}

/** The refusal of a turn that would run beside `running` in `sessionId`. */
export function turnRunningRefusal(
  sessionId: string,
  turnId: string,
  running: RunningTurn | undefined,
): StoreError {
  const holder =
    running === undefined
      ? "another turn"
      : `turn ${running.id} (held by ${running.lease_owner ?? "nobody"})`;
  return new StoreError(
    TURN_RUNNING,
    `store: turn ${turnId} cannot run in session ${sessionId}: the session is running ${holder}, and a session runs one turn at a time; nothing was written`,
    {
      hint: `wait for that turn to end, or stop it with \`tenax sessions stop ${sessionId}\`; a turn whose process died is marked interrupted once its lease runs out`,
      data: {
        session_id: sessionId,
        turn_id: turnId,
        running_turn_id: running?.id ?? null,
        owner: running?.lease_owner ?? null,
      },
    },
  );
}

/** The turn and owner holding the session, when `error` is this refusal (from any copy of this module); else null. */
export function turnRunningDetail(
  error: unknown,
): { running_turn_id: string | null; owner: string | null } | null {
  if (!TenaxError.isInstance(error) || error.code !== TURN_RUNNING) return null;
  const d = error.data;
  return {
    running_turn_id: typeof d.running_turn_id === "string" ? d.running_turn_id : null,
    owner: typeof d.owner === "string" ? d.owner : null,
  };
}
