// The start of a resumed turn (one a crash interrupted): the same turn row runs again under a new
// lease, the tool calls that were in flight are settled (a read-only one runs again, any other is
// answered with a note that it was not repeated), and the model is told why the turn goes on.
import type { ToolCall } from "../llm/provider.js";
import { fenceRefusal } from "../store/lease-fence.js";
import type { StorePort } from "../store/port.js";
import type { MessageView } from "../store/rows.js";
import { RESUME_NAME, toolCallsOf } from "./history.js";
import type { Tool } from "./tools/types.js";

export const RESUME_NOTE =
  "[Tenax: this turn was interrupted (the process running it stopped) and is resumed from its last saved message. Tool calls that were in flight were run again only if they change nothing; any other says in its result that it was not run again, so check its effect before repeating it. Go on with the task from here.]";

/** The result a resumed turn records for a call that was in flight and may have changed something. */
export function notRunAgain(call: ToolCall): string {
  return JSON.stringify({
    error: `not run again: this ${call.name} call was in flight when the process running the turn stopped, so it may or may not have taken effect. Check its effect (read the file, list the processes, look at the state it changes) before repeating it.`,
    in_flight: true,
  });
}

/** What a resumed turn starts from. */
export interface ResumePoint {
  turnId: string;
  /** The lease epoch this process took the turn over at: its writes to the turn carry it. */
  epoch: number;
  /** Calls of the turn's last assistant message that have no result. */
  open: ToolCall[];
}

/** The messages one turn wrote, in order. */
export async function turnMessages(
  store: StorePort,
  sessionId: string,
  turnId: string,
): Promise<MessageView[]> {
  return (await store.getMessages(sessionId)).filter((m) => m.turn_id === turnId);
}

/** The tool calls of the turn's last assistant message that never got their result. */
export function openCalls(messages: readonly MessageView[]): ToolCall[] {
  const last = messages.findLastIndex((m) => m.role === "assistant");
  if (last < 0) return [];
  const calls = toolCallsOf(messages[last]?.tool_calls ?? null);
  const answered = new Set(
    messages.slice(last + 1).flatMap((m) => (m.role === "tool" && m.tool_call_id ? [m.tool_call_id] : [])),
  );
  return calls.filter((c) => !answered.has(c.id));
}

/**
 * Put the turn back to running under this process's lease, at a new lease epoch; returns where it
 * goes on from. A compare-and-set on the status and epoch read: of two processes resuming the turn
 * at once exactly one wins, the other is refused with `lease_lost` (store/lease-fence.ts) and must
 * not run it.
 */
export async function restartTurn(
  store: StorePort,
  sessionId: string,
  turnId: string,
  leaseMs: number,
  now: number,
  /** The lease owner this process writes (core/owners.ts). */
  owner = `pid:${process.pid}`,
): Promise<ResumePoint> {
  const turn = (await store.getTurns(sessionId)).find((t) => t.id === turnId);
  if (!turn) throw new Error(`cannot resume turn ${turnId}: session ${sessionId} has no such turn`);
  // Running: another process holds it (perhaps one that took it over a moment ago).
  if (turn.status === "running")
    throw fenceRefusal({ turnId, epoch: undefined, status: "interrupted" }, turn) ?? new Error("unreachable");
  if (turn.status === "completed")
    throw new Error(`cannot resume turn ${turnId}: it is ${turn.status}, not interrupted`);
  await store.updateTurn({
    id: turnId,
    status: "running",
    ended_at: null,
    lease_owner: owner,
    lease_expires_at: now + leaseMs,
    heartbeat_at: now,
    error: null,
    lease_epoch: turn.lease_epoch,
    expect_status: turn.status,
    new_epoch: true,
  });
  return {
    turnId,
    epoch: turn.lease_epoch + 1,
    open: openCalls(await turnMessages(store, sessionId, turnId)),
  };
}

/**
 * Answer every open call (a read-only tool, or one that was waiting on an approval and so ran
 * nothing, runs again through `run`; any other gets the not-run-again result), then add the note.
 * Returns a guardrail halt message, if one came.
 */
export async function settleOpenCalls(
  store: StorePort,
  sessionId: string,
  point: ResumePoint,
  tools: ReadonlyMap<string, Tool>,
  run: (call: ToolCall) => Promise<string | null>,
  awaitsApproval: (call: ToolCall) => Promise<boolean> = async () => false,
): Promise<string | null> {
  for (const call of point.open) {
    if (tools.get(call.name)?.readOnly === true || (await awaitsApproval(call))) {
      const halt = await run(call);
      if (halt) return halt;
      continue;
    }
    await store.appendMessage({
      session_id: sessionId,
      role: "tool",
      content: notRunAgain(call),
      tool_call_id: call.id,
      name: call.name,
      turn_id: point.turnId,
      lease_epoch: point.epoch,
    });
  }
  // After the results: a user message between a call and its result would orphan the result.
  await store.appendMessage({
    session_id: sessionId,
    role: "user",
    content: RESUME_NOTE,
    name: RESUME_NAME,
    turn_id: point.turnId,
    lease_epoch: point.epoch,
  });
  return null;
}
