// Token usage per session, added up in the store after each turn, so /usage tells the truth
// after a restart and across processes.
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";

export const USAGE_KIND = "usage";

export interface SessionUsage {
  input_tokens: number;
  output_tokens: number;
  turns: number;
}

/**
 * The write that adds a turn's tokens to its session's usage record, for the caller to commit
 * together with its own writes (the turn commits it with its end: one durable commit, not two).
 */
export async function usageOp(
  store: StorePort,
  sessionId: string,
  usage: { input_tokens: number; output_tokens: number },
  now: number,
): Promise<WriteOp> {
  const before = (await store.getRecord<SessionUsage>(USAGE_KIND, sessionId)) ?? {
    input_tokens: 0,
    output_tokens: 0,
    turns: 0,
  };
  const after: SessionUsage = {
    input_tokens: before.input_tokens + usage.input_tokens,
    output_tokens: before.output_tokens + usage.output_tokens,
    turns: before.turns + 1,
  };
  return {
    op: "record.put",
    kind: USAGE_KIND,
    key: sessionId,
    session_id: sessionId,
    value: JSON.stringify(after),
    updated_at: now,
  };
}
