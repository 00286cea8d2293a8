// A turn's end: why it stopped short, as a failure value (`failTurn`), then its end committed in
// one write with its final answer, fenced by its lease (`endTurn`), and its result told and
// returned (`finishTurn`). A turn whose end cannot be written is told to the agent as abandoned.
import type { Redactor } from "../core/redact.js";
import { isLeaseLost } from "../store/lease-fence.js";
import type { WriteOp } from "../store/ops.js";
import { MARKER_ROLE } from "./history.js";
import {
  guardrailFailure,
  interruptFailure,
  lostLease,
  type TurnFailure,
  thrownFailure,
} from "./turn-failure.js";
import { TurnHalted } from "./turn-loop.js";
import type { TurnRun } from "./turn-run.js";
import type { TurnStart } from "./turn-start.js";
import type { TurnDeps, TurnInput, TurnResult, TurnStatus } from "./turn-types.js";
import { usageOp } from "./usage.js";

/** Classify what stopped the turn's loop: an abort (interrupted, or a deadline), a guardrail, an error. */
export function failTurn(agent: TurnDeps, start: TurnStart, run: TurnRun, e: unknown): void {
  const { signal } = start;
  run.partial = true;
  if (isLeaseLost(e) && !signal.aborted) start.controller.abort(lostLease(e));
  if (signal.aborted) {
    run.failure = interruptFailure(signal.reason);
    // A turn ended by its deadline failed: nobody asked for it to stop.
    run.status = run.failure.code === "turn_deadline" ? "failed" : "interrupted";
  } else if (e instanceof TurnHalted) {
    run.status = "failed";
    run.failure = guardrailFailure(e.code, e.message);
    start.emit({ type: "guardrail", layer: "guardrails", message: e.message });
  } else {
    run.status = "failed";
    // An unexpected error's own words go to clients and the log: no secret in them either.
    run.failure = redactedFailure(thrownFailure(e, run.overflow), agent.redactor);
  }
}

/**
 * After the turn settled: its end written (unless another process took it over, which ends it),
 * `turn_finished` told, the result returned. Throws when the start never became durable or the
 * end could not be written; the turn is then told to the agent as abandoned.
 */
export async function finishTurn(
  agent: TurnDeps,
  input: TurnInput,
  start: TurnStart,
  run: TurnRun,
): Promise<TurnResult> {
  const { turnId, epoch } = start;
  // A turn whose start never became durable was never stored: its error is the turn's.
  await start.durable.catch((e: unknown) => {
    agent.abandoned?.(turnId);
    throw e;
  });
  if (run.failure?.code !== "lease_lost") {
    try {
      const { status, failure, answer, usage } = run;
      await endTurn(agent, input, { turnId, epoch, status, failure, answer, usage, reply: run.reply() });
    } catch (e) {
      // The turn was taken over while it ran: its answer and end were refused; the other owner ends it.
      if (!isLeaseLost(e)) {
        agent.abandoned?.(turnId);
        throw e;
      }
      run.status = "interrupted";
      run.failure = interruptFailure(lostLease(e));
    }
  }
  const { status, failure } = run;
  const lost = failure?.code === "lease_lost";
  const error = failure?.message ?? null;
  if (lost) run.partial = true;
  start.emit({ type: "turn_finished", turn_id: turnId, status, partial: run.partial, error, failure });
  return {
    session_id: input.sessionId,
    turn_id: turnId,
    status,
    // Nothing of a taken-over turn's answer was stored: it is not this process's to tell.
    reply: lost ? "" : run.reply(),
    partial: run.partial,
    finish_reason: run.finishReason,
    error,
    failure,
    iterations: run.iterations,
    usage: run.usage,
    model: run.model,
  };
}

/** What the turn's end writes: how it ended, and the final answer when it has one. */
interface TurnEnd {
  turnId: string;
  epoch: number;
  status: TurnStatus;
  failure: TurnFailure | null;
  answer: WriteOp | null;
  usage: { input_tokens: number; output_tokens: number };
  /** The whole reply, for the caller's end writes. */
  reply: string;
}

/**
 * Commit the turn's end, fenced by its lease epoch: its marker when it did not complete, then the
 * final answer, the caller's end writes, the session's usage and the turn's row together (one
 * durable commit: the turn's one sync when its caller acknowledges it by its answer).
 */
async function endTurn(agent: TurnDeps, input: TurnInput, end: TurnEnd): Promise<void> {
  const { store, deps } = agent;
  const { turnId, epoch, status, failure, answer, usage } = end;
  const error = failure?.message ?? null;
  if (failure !== null) {
    await store
      .appendMessage({
        session_id: input.sessionId,
        role: MARKER_ROLE,
        content: status === "interrupted" ? failure.message : `turn failed: ${failure.message}`,
        turn_id: turnId,
        lease_epoch: epoch,
      })
      .catch(() => {});
  }
  const now = deps.clock.now();
  // The final answer, the session's usage and the turn's end commit together: one durable commit.
  // Usage is best effort: a usage record that cannot be read or written never keeps the turn open.
  const ended: WriteOp = {
    op: "turn.update",
    id: turnId,
    status,
    ended_at: now,
    heartbeat_at: now,
    lease_owner: null,
    lease_expires_at: null,
    error,
    lease_epoch: epoch,
  };
  let usageWrite: WriteOp | null = null;
  if (usage.input_tokens + usage.output_tokens > 0) {
    try {
      usageWrite = await usageOp(store, input.sessionId, usage, now);
    } catch {
      // An unreadable usage record never keeps the turn from ending.
    }
  }
  let extra: readonly WriteOp[] = [];
  if (status === "completed" && input.endWrites !== undefined) {
    try {
      extra = await input.endWrites(end.reply);
    } catch {
      // The caller's own bookkeeping (a conversation's hash) never keeps the turn from ending.
    }
  }
  const saved = answer === null ? [] : [answer];
  const whole = [...saved, ...extra, ...(usageWrite === null ? [] : [usageWrite]), ended];
  if (whole.length === saved.length + 1) await store.write(whole);
  else
    await store
      .write(whole)
      .catch((e: unknown) => (isLeaseLost(e) ? Promise.reject(e) : store.write([...saved, ended])));
}

/** A failure's words for people, with the profile's secrets redacted (the classified error is already). */
function redactedFailure(failure: TurnFailure, redactor: Redactor | undefined): TurnFailure {
  if (redactor === undefined) return failure;
  return {
    ...failure,
    message: redactor.redactMessage(failure.message),
    next: redactor.redactMessage(failure.next),
  };
}
