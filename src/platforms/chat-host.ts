// What the chat service needs from whoever runs agent turns (the gateway, or the agent itself in
// tests and the CLI): sessions made, turns started, interrupted and watched, approvals read and
// decided. The service decides what runs and what the chat is told; the host runs turns.
// The gateway's host is a few lines: `start` is Gateway.launch({ sessionId, text, watcher:
// { onEvent, shutdown() {} }, approvals: { requestedBy } }) and its `result`; `interrupt` is
// Gateway.interrupt(id, reason, "stopped"); the approvals are the agent's ApprovalBook. Its
// HttpError codes (shutting_down, too_many_turns, session_queue_full, session_not_found) are
// the ones the service reads.
import type { ApprovalRecord } from "../agent/approvals/approval-records.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import type { WriteOp } from "../store/ops.js";

/** One chat message's agent turn, in a session the service has already created. */
export interface ChatTurnRequest {
  sessionId: string;
  text: string;
  /** Every event of the turn (the service looks for `approval_requested`). */
  onEvent(event: AgentEvent): void;
  /** For the approval records: who can answer, e.g. "telegram chat 42". */
  requestedBy: string;
}

/** The decisions a chat can make (the buttons, /approve, /deny). */
export type ChatDecision = "approve" | "deny";

/** Error codes of a start the service tries again a moment later (the host is full). */
export const BUSY_CODES: readonly string[] = ["too_many_turns", "session_queue_full"];
/** Error codes of a start refused because the host is stopping: the message waits for the next start. */
export const STOPPING_CODES: readonly string[] = ["shutting_down", "unavailable"];

export interface ChatHost {
  /** The write creating a session (committed by the service with its own record of it). */
  newSessionOp(options: { title: string; source: string }): { id: string; op: WriteOp };
  /**
   * Start the turn. Rejects with an error whose `code` is one of BUSY_CODES when the host is full
   * (the service tries again), one of STOPPING_CODES while it stops (the message stays pending),
   * anything else for a failure the chat is told of.
   */
  start(request: ChatTurnRequest): Promise<{ result: Promise<TurnResult> }>;
  /** Interrupt the session's running turn as stopped by its user; false when it has none here. */
  interrupt(sessionId: string, reason: string): boolean;
  /** Whether the session has a turn running here. */
  isRunning(sessionId: string): boolean;
  /** The session's approvals waiting for a decision, oldest first. */
  pendingApprovals(sessionId: string): Promise<ApprovalRecord[]>;
  getApproval(approvalId: string): Promise<ApprovalRecord | null>;
  /**
   * Decide a pending approval; resolves with the record once committed. Rejects with a TenaxError
   * `not_found` or `already_decided` (the ApprovalBook's).
   */
  decide(approvalId: string, decision: ChatDecision, decidedBy: string): Promise<ApprovalRecord>;
}

/** The `code` of an error, if it has one (TenaxError, HttpError). */
export function errorCode(error: unknown): string | null {
  if (typeof error !== "object" || error === null || !("code" in error)) return null;
  const code = (error as { code: unknown }).code;
  return typeof code === "string" ? code : null;
}
