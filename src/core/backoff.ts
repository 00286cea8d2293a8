// Stepped backoff with jitter, shared by the durable outboxes (cron's and the chat platforms'):
// the wait after the Nth failed attempt is the Nth step (the cap past the last one), spread by a
// fraction either way so that many entries failing together do not retry together.
import type { Random } from "./deps.js";

export interface StepBackoff {
  /** The waits after the 1st, 2nd, ... failed attempt (ms). */
  stepsMs: readonly number[];
  /** The wait after every attempt past the steps (ms). */
  capMs: number;
  /** How far either way the wait may move: 0.2 is ±20 %. */
  spread?: number;
}

/** The wait after failed attempt `attempt` (1-based), jittered by `random`. */
export function stepBackoff(policy: StepBackoff, attempt: number, random: Random = Math.random): number {
  const step = policy.stepsMs[Math.max(0, attempt - 1)] ?? policy.capMs;
  const base = Math.min(policy.capMs, step);
  const spread = policy.spread ?? 0.2;
  return Math.round(base * (1 - spread + 2 * spread * random()));
}
