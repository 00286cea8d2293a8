// The turn's contract with its callers: what it needs (TurnDeps), what it is asked (TurnInput),
// what it tells (AgentEvent) and what it returns (TurnResult). The turn itself is src/agent/turn.ts,
// which re-exports all of these.
import type { SnapshotResult } from "../checkpoints/store.js";
import type { Deps } from "../core/deps.js";
import type { Redactor } from "../core/redact.js";
import type { RouteEvent } from "../llm/route-events.js";
import type { ModelRouter, TurnRoute } from "../llm/router.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import type { CompressionEvent } from "./compression.js";
import type { Compaction } from "./history.js";
import type { Scheduler } from "./scheduler.js";
import type { ToolSummary } from "./tool-summary.js";
import type { ApprovalChannel, Tool, ToolEvent } from "./tools/types.js";
import type { TurnFailure } from "./turn-failure.js";
import type { ProgressEvent, TurnProgress } from "./turn-progress.js";
import type { TurnRequest } from "./turn-request.js";
import type { ResumePoint } from "./turn-resume.js";

export type TurnStatus = "completed" | "interrupted" | "failed";

export type AgentEvent =
  | RouteEvent
  | ToolEvent
  | { type: "turn_started"; session_id: string; turn_id: string }
  | { type: "tool_started"; turn_id: string; id: string; name: string; arguments: string }
  | {
      type: "tool_finished";
      turn_id: string;
      id: string;
      name: string;
      ok: boolean;
      ms: number;
      /** The result in a few words ("12 lines", "exit 1: ..."), for people watching. */
      summary: ToolSummary;
    }
  | { type: "guardrail"; layer: "guardrails"; message: string }
  | { type: "continuation"; turn_id: string; count: number }
  | {
      type: "turn_finished";
      turn_id: string;
      status: TurnStatus;
      partial: boolean;
      error: string | null;
      failure: TurnFailure | null;
    }
  | { type: "checkpoint"; layer: "checkpoints"; project: string; result: SnapshotResult; message: string }
  | { type: "checkpoint_failed"; layer: "checkpoints"; message: string }
  | CompressionEvent
  | ProgressEvent;

/** What the turn needs from context compression (src/agent/compression.ts implements it). */
export interface TurnCompressor {
  needed(input: {
    transcript: Awaited<ReturnType<StorePort["getMessages"]>>;
    compaction: Compaction | null;
    system: string | null;
    window: number;
    lastInputTokens: number | null;
  }): boolean;
  compress(
    input: {
      sessionId: string;
      turnId: string | null;
      leaseEpoch?: number;
      transcript: Awaited<ReturnType<StorePort["getMessages"]>>;
      compaction: Compaction | null;
      system: string | null;
      window: number;
      lastInputTokens: number | null;
      reason: "threshold" | "overflow" | "manual";
      signal: AbortSignal;
      /** This call's own listener (`/compress`), besides the compressor's. */
      onEvent?: (event: CompressionEvent) => void;
    },
    turn: { attempts: number; overflowBypassUsed: boolean },
  ): Promise<Compaction | null>;
}

export interface TurnLimits {
  max_iterations: number;
  max_continuations: number;
  identical_call_limit: number;
  failing_call_limit: number;
  lease_seconds: number;
}

export interface TurnDeps {
  store: StorePort;
  router: ModelRouter;
  tools: readonly Tool[];
  scheduler: Scheduler;
  deps: Deps;
  limits: TurnLimits;
  system: string | null;
  /** Kills every process a task owns (the process registry). */
  cleanupTask(taskId: string): Promise<unknown>;
  /** Snapshot a project before the turn's first change there (checkpoints); null when off. */
  checkpoint: ((dir: string, reason: string) => Promise<SnapshotResult>) | null;
  compressor: TurnCompressor | null;
  /** The profile's secrets, redacted from every tool result before the model or the store sees it. */
  redactor?: Redactor;
  /** Window used when config does not list the primary model's. */
  defaultWindow?: number;
  /**
   * Whether this call of the turn waits on a pending approval (nothing of it ran): a resumed turn
   * runs it again, to wait on the same record.
   */
  awaitsApproval?: (sessionId: string, turnId: string, callId: string) => Promise<boolean>;
  /** The process's progress tracker (stalls, the deadline, stop requests); none: the turn is not watched. */
  progress?: TurnProgress | null;
  /** The lease owner this process's turns are written with (core/owners.ts); `pid:N` when left out. */
  turnOwner?: string;
  /** Now, in the clock leases are written in (core/owners.ts leaseNow); the local clock when left out. */
  leaseNow?: () => number;
  /** Bytes the task's processes have written so far (their output is a tool's progress). */
  taskOutput?: (taskId: string) => number;
  /**
   * Told of a turn this process gave up on with its row still marked running (its end could not
   * be written: the store refused it), so the turn's session is not held until its lease runs out.
   */
  abandoned?: (turnId: string) => void;
}

export interface TurnInput {
  sessionId: string;
  text: string;
  cwd: string;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  /** The owner of processes the turn's tools start; defaults to the turn id. */
  taskId?: string;
  /** The routing state, when a caller keeps one across calls; a new turn starts on the primary. */
  route?: TurnRoute;
  /**
   * Go on with this interrupted turn (same id) from its last saved message instead of starting
   * one with `text` (then unused): see src/agent/turn-resume.ts.
   */
  resume?: {
    turnId: string;
    /** Where it goes on from, when the caller has taken it over already (`Agent.takeOver`). */
    point?: ResumePoint;
  };
  /** Writes committed with the turn's start, before it (a new session and its history). */
  before?: readonly WriteOp[];
  /**
   * When the caller first tells anyone of the turn. "start" (the default): before the model
   * answers (a run, a chat-platform message, a cron occurrence, a stream), so the question is
   * durable before the turn is told. "answer": by the answer alone (a chat completion not
   * streamed), so the question is committed first but becomes durable with the turn's end, in its
   * one sync; a crash before that leaves the caller with a broken connection and nothing told.
   */
  acknowledgedBy?: "start" | "answer";
  /** Writes committed with a completed turn's end, given its whole reply (a conversation's hash). */
  endWrites?: (reply: string) => Promise<readonly WriteOp[]>;
  /** What the caller asks of every model call of this turn (an API client's system text, cap, sampling). */
  request?: TurnRequest;
  /**
   * Who can approve a command the exec policy holds back (the runs API, the chat); without one,
   * such a command is denied at once and the model reads why.
   */
  approvals?: ApprovalChannel | null;
  /** False when the caller keeps its own deadline (cron's --timeout): agent.turn_deadline does not apply. */
  deadline?: boolean;
}

export interface TurnResult {
  session_id: string;
  turn_id: string;
  status: TurnStatus;
  /** The final answer (continuations joined); what was said so far when the turn did not complete. */
  reply: string;
  /** True when the reply was cut (output limit after the allowed continuations, or the turn stopped). */
  partial: boolean;
  /** The provider's own finish reason of the last call, unchanged. */
  finish_reason: string | null;
  /** The failure's message, for people; null when the turn completed. */
  error: string | null;
  /** Why the turn did not complete, as a value (code, layer, next step); null when it completed. */
  failure: TurnFailure | null;
  iterations: number;
  usage: { input_tokens: number; output_tokens: number };
  model: { provider: string; model: string } | null;
}
