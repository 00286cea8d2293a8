// The words of `tenax chat`'s status output, as plain text: a tool call and its result, a retry
// and the key notes folded into it. status-view.ts decides when each is shown and how.
import { type ToolSummary, toolTarget } from "../../agent/tool-summary.js";
import type { RetryEvent } from "../../llm/retry.js";
import type { StatusEvent } from "../../llm/route-events.js";

export type Rotated = Extract<StatusEvent, { type: "credential_rotated" }>;
export type Exhausted = Extract<StatusEvent, { type: "credentials_exhausted" }>;
export type Retry = Extract<RetryEvent, { type: "retry" }>;
export type GaveUp = Extract<RetryEvent, { type: "retry_exhausted" }>;

export function toolStartLine(name: string, argumentsJson: string): string {
  const target = toolTarget(name, argumentsJson);
  return `▸ ${name}${target === "" ? "" : `  ${target}`}`;
}

export function toolEndLine(summary: ToolSummary | undefined, ok: boolean, ms: number): string {
  const good = summary?.ok ?? ok;
  return `  ${good ? "✓" : "✗"} ${summary?.text ?? (ok ? "done" : "failed")}${ms >= 1000 ? ` (${seconds(ms)})` : ""}`;
}

/** The key notes held for the retry they led to: "key 12ab… cooling down, no other key usable". */
export function keyNotes(rotated: Rotated | null, exhausted: Exhausted | null): string | null {
  const parts: string[] = [];
  // A provider that needs no key: the server itself cools down, and there is no other key to try.
  if (rotated && !rotated.keyed) return `${rotated.provider} cooling down (it needs no key)`;
  if (exhausted && !exhausted.keyed) return `${exhausted.provider} cooling down (it needs no key)`;
  if (rotated)
    parts.push(`key ${rotated.from} ${rotated.verdict === "disabled" ? "disabled" : "cooling down"}`);
  if (exhausted && rotated) parts.push("no other key usable");
  else if (exhausted)
    parts.push(exhausted.next_usable_at === null ? "every key is disabled" : "every key is cooling down");
  return parts.length === 0 ? null : parts.join(", ");
}

/** "rate_limit (HTTP 429) from sim/echo" */
export function failureOf(e: Retry | GaveUp): string {
  return `${e.reason}${e.status === null ? "" : ` (HTTP ${e.status})`} from ${e.provider}/${e.model}`;
}

/** What went wrong in the words of the layer that saw it: the key notes, else the message. */
export function retryDetail(e: Retry | GaveUp, notes: string | null): string {
  return notes ?? oneLine(e.message, 160);
}

/** One line for a retry's wait, as a log or a pipe gets it when the wait starts. */
export function retryLine(e: Retry, notes: string | null, turnMs: number | null): string {
  const parts = [
    `attempt ${e.attempt + 1} of ${e.max_attempts} in ${seconds(e.delay_ms)}`,
    ...(turnMs === null ? [] : [`turn ${seconds(turnMs)}`]),
    ...(e.context_tokens === null ? [] : [`context ~${e.context_tokens} tokens`]),
  ];
  return `[retry] ${failureOf(e)}: ${retryDetail(e, notes)}; ${parts.join(", ")}`;
}

const GIVE_UP: Readonly<Record<GaveUp["why"], string>> = {
  attempts_spent: "every attempt failed",
  retry_after_too_long: "the provider asked for a longer wait than Tenax sleeps through",
  not_retryable: "the failure is not worth another attempt",
  aborted: "stopped",
};

export function gaveUpLine(e: GaveUp, notes: string | null): string {
  return `[retry] ${failureOf(e)}: ${retryDetail(e, notes)}; gave up after ${e.attempt} of ${e.max_attempts} attempts in ${seconds(e.elapsed_ms)} (${GIVE_UP[e.why]})`;
}

/** Key notes that led to no retry line: their own line. */
export function credentialsLine(rotated: Rotated | null, exhausted: Exhausted | null): string {
  if (exhausted) {
    const notes = rotated
      ? `key ${rotated.from} ${rotated.verdict === "disabled" ? "disabled" : "cooling down"}; `
      : "";
    return `[credentials] ${notes}${exhausted.message}`;
  }
  return `[credentials] ${rotated?.message ?? ""}`;
}

export function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)}s`;
}

function oneLine(text: string, max = 120): string {
  const line = text.replace(/\s*\n\s*/g, " ⏎ ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}
