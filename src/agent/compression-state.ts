// Compression's durable state besides the compactions themselves: the summarizer's cooldown after
// failures (one per profile, record "component"/"compression") and the per-session pause after
// passes that saved almost nothing (record "compression_pause"/session id). Both live in the
// store so a restart neither forgets a failing summarizer nor retries it at once.
import { z } from "zod";
import type { RecordPutOp } from "../store/ops.js";

export const COMPONENT_KIND = "component";
export const COMPRESSION_COMPONENT_KEY = "compression";
export const COMPRESSION_PAUSE_KIND = "compression_pause";

const cooldownSchema = z.object({
  /** Consecutive failures of the summarizer; success resets it (the record is deleted). */
  failures: z.number().int().min(1),
  cooldown_until: z.number(),
  failed_at: z.number(),
  last_error: z.string(),
});
export type CompressionCooldown = z.infer<typeof cooldownSchema>;

const pauseSchema = z.object({
  /** Automatic (threshold) compression of the session waits until then. */
  until: z.number(),
  /** The fraction of the request the pass saved, for the event and for status. */
  saving: z.number(),
  paused_at: z.number(),
});
export type CompressionPause = z.infer<typeof pauseSchema>;

/** What reads records: the writer's Store or a read-only StoreReader (for `tenax status`). */
export interface RecordSource {
  getRecord<T = unknown>(kind: string, key: string): Promise<T | null>;
}

/** The summarizer's cooldown as stored; null when there is none or the record is unreadable. */
export async function readCooldown(source: RecordSource): Promise<CompressionCooldown | null> {
  const parsed = cooldownSchema.safeParse(await source.getRecord(COMPONENT_KIND, COMPRESSION_COMPONENT_KEY));
  return parsed.success ? parsed.data : null;
}

export async function readPause(source: RecordSource, sessionId: string): Promise<CompressionPause | null> {
  const parsed = pauseSchema.safeParse(await source.getRecord(COMPRESSION_PAUSE_KIND, sessionId));
  return parsed.success ? parsed.data : null;
}

/** The cooldown after the n-th consecutive failure: the steps in order, the last one repeating. */
export function cooldownMs(failures: number, stepsSeconds: readonly number[]): number {
  const step = stepsSeconds[Math.min(Math.max(failures, 1), stepsSeconds.length) - 1] ?? 60;
  return Math.round(step * 1000);
}

export function nextCooldown(
  previous: CompressionCooldown | null,
  now: number,
  error: string,
  stepsSeconds: readonly number[],
): CompressionCooldown {
  const failures = (previous?.failures ?? 0) + 1;
  return {
    failures,
    cooldown_until: now + cooldownMs(failures, stepsSeconds),
    failed_at: now,
    last_error: error,
  };
}

export function cooldownOp(value: CompressionCooldown | null, now: number): RecordPutOp {
  return {
    op: "record.put",
    kind: COMPONENT_KIND,
    key: COMPRESSION_COMPONENT_KEY,
    session_id: null,
    value: value === null ? null : JSON.stringify(value),
    updated_at: now,
  };
}

export function pauseOp(sessionId: string, value: CompressionPause, now: number): RecordPutOp {
  return {
    op: "record.put",
    kind: COMPRESSION_PAUSE_KIND,
    key: sessionId,
    session_id: sessionId,
    value: JSON.stringify(value),
    updated_at: now,
  };
}
