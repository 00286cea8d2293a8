// One attempt at one outbox entry through its adapter, classified: delivered (with the message id),
// or failed with the adapter's PlatformFailure. Never throws: an adapter that throws, or does not
// answer within the timeout, is a retryable failure. Formatting the platform rejected is resent
// at once as plain text, within the same attempt.
import { errorMessage } from "../core/errors.js";
import {
  type OutboundOp,
  type OutboundResult,
  type PlatformAdapter,
  type PlatformFailure,
  retryable,
} from "./adapter.js";
import type { OutboxOp } from "./outbox-records.js";

export type AttemptOutcome =
  | { kind: "delivered"; message_id: string | null; op: OutboxOp }
  | { kind: "failed"; error: PlatformFailure; op: OutboxOp };

/** The wire op of an entry's op, the edit's message id already resolved, the entry's key attached. */
function wireOp(op: OutboxOp, messageId: string | null, key: string): OutboundOp {
  if (op.type === "send") return { ...op, idempotency_key: key };
  const { of_key: _ofKey, message_id: _id, ...rest } = op;
  return { ...rest, message_id: messageId ?? "", idempotency_key: key };
}

async function performOnce(
  adapter: PlatformAdapter,
  op: OutboundOp,
  timeoutMs: number,
  stop: AbortSignal,
): Promise<OutboundResult> {
  const signal = AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]);
  // An adapter that ignores the signal is not waited for past it.
  const aborted = new Promise<OutboundResult>((resolve) => {
    const answer = () =>
      resolve({
        ok: false,
        error: retryable(
          stop.aborted
            ? `${adapter.name}: stopped before the platform answered`
            : `${adapter.name}: no answer within ${timeoutMs} ms`,
        ),
      });
    if (signal.aborted) answer();
    else signal.addEventListener("abort", answer, { once: true });
  });
  try {
    return await Promise.race([adapter.perform(op, signal), aborted]);
  } catch (error) {
    return { ok: false, error: retryable(`${adapter.name}: ${errorMessage(error)}`) };
  }
}

export async function attempt(
  adapter: PlatformAdapter,
  op: OutboxOp,
  messageId: string | null,
  timeoutMs: number,
  stop: AbortSignal,
  /** The entry's key, sent as the op's idempotency key. */
  key: string,
): Promise<AttemptOutcome> {
  const first = await performOnce(adapter, wireOp(op, messageId, key), timeoutMs, stop);
  if (first.ok) return { kind: "delivered", message_id: first.message_id, op };
  if (!first.error.plain_text || op.format === "plain") return { kind: "failed", error: first.error, op };
  const plain: OutboxOp = { ...op, format: "plain" };
  const second = await performOnce(adapter, wireOp(plain, messageId, key), timeoutMs, stop);
  return second.ok
    ? { kind: "delivered", message_id: second.message_id, op: plain }
    : { kind: "failed", error: second.error, op: plain };
}
