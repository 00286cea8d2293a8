// One attempt through a channel, bounded: the channel's timeout or the outbox's stop ends it as a
// retryable failure, whether or not the channel heeds the signal, and a channel that throws failed
// retryably too. The outbox never waits on a channel past its limit.
import { errorMessage } from "../core/errors.js";
import type { OutboxChannel, SendOutcome } from "./channel.js";
import type { OutboxEntry } from "./entry.js";

export async function boundedAttempt<P>(
  channel: OutboxChannel<P>,
  entry: OutboxEntry<P>,
  stop: AbortSignal,
  start: number,
  prepared: string | null,
): Promise<SendOutcome<P>> {
  const timeoutMs = channel.policy.timeoutMs;
  const signal = AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]);
  const aborted = new Promise<SendOutcome<P>>((resolve) => {
    const answer = () =>
      resolve({
        kind: "retry",
        error: stop.aborted
          ? `${channel.name}: stopped before it answered`
          : `${channel.name}: no answer within ${timeoutMs} ms`,
        retryAfterMs: null,
      });
    if (signal.aborted) answer();
    else signal.addEventListener("abort", answer, { once: true });
  });
  try {
    return await Promise.race([channel.send(entry, { signal, timeoutMs, now: start, prepared }), aborted]);
  } catch (error) {
    return { kind: "retry", error: `${channel.name}: ${errorMessage(error)}`, retryAfterMs: null };
  }
}
