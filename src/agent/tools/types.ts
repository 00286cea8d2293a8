// What every tool the agent has looks like, and what it is given when it runs. A tool returns a
// JSON-serialisable result; anything it throws is turned into a JSON error result for the model by
// the turn loop, so a tool never ends a turn by itself.
import type { ToolSpec } from "../../llm/provider.js";

export interface ToolProgressEvent {
  type: "tool_progress";
  tool: string;
  message: string;
}

/** A command the exec policy holds back waits for an approval (its record is committed). */
export interface ApprovalRequestedEvent {
  type: "approval_requested";
  layer: "approvals";
  approval_id: string;
  session_id: string;
  turn_id: string;
  tool_call_id: string;
  tool: string;
  command: string;
  reason: string;
  dangers: Array<{ rule: string; text: string; why: string }>;
  /** What an "always" decision adds to tools.exec.allow. */
  pattern: string;
  expires_at: number;
  message: string;
}

/** The approval was decided, expired or cancelled (its record says so, committed). */
export interface ApprovalDecidedEvent {
  type: "approval_decided";
  layer: "approvals";
  approval_id: string;
  status: "approved" | "denied" | "expired" | "cancelled";
  decision: "approve" | "deny" | "session" | "always" | null;
  decided_by: string | null;
  message: string;
}

export type ToolEvent = ToolProgressEvent | ApprovalRequestedEvent | ApprovalDecidedEvent;

/** Who can answer an approval a turn asks for; null when no one can (it is denied at once). */
export interface ApprovalChannel {
  /** For the record: "runs API, run run_...", "tenax chat, pid 123". */
  requestedBy: string;
}

/** The background processes of every task of this process, each with its owner. */
export interface ProcessOwner {
  /** The task (a turn, or a subagent's task) that owns the processes a tool starts. */
  taskId: string;
}

export interface ToolContext extends ProcessOwner {
  /** Fires on interrupt: a tool stops at once, killing what it started. */
  signal: AbortSignal;
  sessionId: string;
  turnId: string;
  /** The lease epoch the turn's process holds: the turn's own writes carry it (store/lease-fence.ts). */
  leaseEpoch?: number;
  /** The project folder relative paths resolve against. */
  cwd: string;
  /**
   * Call before changing files under `dir` (write_file, patch, a terminal command that may write):
   * the checkpoint layer snapshots the project at most once per turn. Resolves when it is safe to
   * change; never throws (a failed snapshot is reported as an event and the change goes ahead).
   */
  beforeFileChange(dir: string, reason: string): Promise<void>;
  emit(event: ToolEvent): void;
  /** The id of the tool call being run (an approval is found again by it after a restart). */
  callId: string;
  /** Who can approve what the exec policy holds back in this turn; null: no one (denied at once). */
  approvals: ApprovalChannel | null;
}

/** What a turn gives every tool call; each call adds its own id. */
export type TurnToolContext = Omit<ToolContext, "callId">;

export interface Tool<Args = Record<string, unknown>> {
  /** Every agent tool describes itself to the model. */
  spec: ToolSpec & { description: string };
  /** Safe to run again after a crash (it changes nothing): a resumed turn may repeat it. */
  readOnly: boolean;
  /** Polls something that changes by itself (process poll): exempt from the identical-call streak. */
  poller?: boolean;
  /** Arguments are the parsed JSON object the model sent; checking them is the tool's job. */
  run(args: Args, context: ToolContext): Promise<unknown>;
}

/** A tool's complaint about its input or its work: becomes `{"error": message, ...}` for the model. */
export class ToolError extends Error {
  override readonly name = "ToolError";
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}
