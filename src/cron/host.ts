// What the cron engine needs from whoever runs agent turns (the gateway, or `tenax cron tick` on
// its own), and what it tells: the engine decides what runs and records it; the host runs turns.
import type { TurnResult } from "../agent/turn.js";

/** One job run's agent turn, in a session the engine has already created. */
export interface CronTurnRequest {
  runKey: string;
  sessionId: string;
  text: string;
  /** A pinned `PROVIDER/NAME`, or null for the primary chain. */
  model: string | null;
  /** The folder the turn's tools start in; null: the host's own. */
  cwd: string | null;
  /** The turn is interrupted (code `timeout`) past this. */
  timeoutMs: number;
}

export interface CronTurnResult {
  turn_id: string;
  /** The turn's status: completed, failed, interrupted, suspended. */
  status: string;
  reply: string;
  /** Why it did not complete, for people; null when it completed. */
  error: string | null;
  /** The classified reason (`rate_limit`, `timeout`, `interrupted`...); null when it completed. */
  error_code: string | null;
}

export interface CronHost {
  /**
   * Start the turn. Rejects with a TenaxError code `too_many_turns` when the host is full (the
   * engine waits for a turn to end and tries again) or `unavailable` while it stops.
   */
  start(request: CronTurnRequest): Promise<{ result: Promise<CronTurnResult> }>;
  /** Interrupt the session's running turn (a timeout); false when it has none here. */
  interrupt(sessionId: string, reason: string): boolean;
  /** Whether the session has a turn running here. */
  isRunning(sessionId: string): boolean;
}

/** What the engine tells the event feed and the log (part of the one event union). */
export type { CronEvent } from "../agent/events.js";

/** The engine's own numbers, for /health, tenax status and /metrics (in-process only). */
export interface CronStats {
  /** How late due runs were claimed after their occurrence, over the last hour. */
  lag_ms: { last: number; max: number; p99: number; samples: number };
  running: number;
  /** Claimed, waiting for a free run slot. */
  queued: number;
  started_total: number;
  /** Per job: runs started and ended by state, since the process started. */
  per_job: Record<string, { started: number; ended: Record<string, number> }>;
  /** The soonest due occurrence of an enabled job, or null. */
  next_due_at: number | null;
  /** Jobs the engine holds (enabled or not). */
  jobs: number;
}

/** `PROVIDER/NAME` as a target (the name may hold slashes). */
export function targetOf(model: string): { provider: string; model: string } {
  const slash = model.indexOf("/");
  return { provider: model.slice(0, slash), model: model.slice(slash + 1) };
}

/** An agent turn's result as a cron run reads it. */
export function cronResult(result: TurnResult): CronTurnResult {
  return {
    turn_id: result.turn_id,
    status: result.status,
    reply: result.reply,
    error: result.error,
    error_code: result.failure?.code ?? (result.status === "completed" ? null : "turn_failed"),
  };
}
