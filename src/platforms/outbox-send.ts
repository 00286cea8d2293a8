// One attempt at one chat message through its adapter, classified: delivered (with the message
// id), or failed with the adapter's PlatformFailure. Formatting the platform rejected is resent at
// once as plain text, within the same attempt. The outbox bounds the attempt (its timeout, its
// stop) and takes an adapter that throws for a retryable failure (src/outbox/attempt.ts).
import type { OutboundOp, PlatformAdapter, PlatformFailure } from "./adapter.js";
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

export async function attempt(
  adapter: PlatformAdapter,
  op: OutboxOp,
  messageId: string | null,
  signal: AbortSignal,
  /** The entry's key, sent as the op's idempotency key. */
  key: string,
): Promise<AttemptOutcome> {
  const first = await adapter.perform(wireOp(op, messageId, key), signal);
  if (first.ok) return { kind: "delivered", message_id: first.message_id, op };
  if (!first.error.plain_text || op.format === "plain") return { kind: "failed", error: first.error, op };
  const plain: OutboxOp = { ...op, format: "plain" };
  const second = await adapter.perform(wireOp(plain, messageId, key), signal);
  return second.ok
    ? { kind: "delivered", message_id: second.message_id, op: plain }
    : { kind: "failed", error: second.error, op: plain };
}
