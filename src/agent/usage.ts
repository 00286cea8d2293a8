// Token usage per session, added up in the store after each turn, so /usage tells the truth
// after a restart and across processes.
import type { Store } from "../store/store.js";

export const USAGE_KIND = "usage";

export interface SessionUsage {
  input_tokens: number;
  output_tokens: number;
  turns: number;
}

/** Token usage adds up per session in the store, so /usage tells the truth after a restart. */
export async function addUsage(
  store: Store,
  sessionId: string,
  usage: { input_tokens: number; output_tokens: number },
) {
  const before = store.getRecord<SessionUsage>(USAGE_KIND, sessionId) ?? {
    input_tokens: 0,
    output_tokens: 0,
    turns: 0,
  };
  await store.putRecord(
    USAGE_KIND,
    sessionId,
    {
      input_tokens: before.input_tokens + usage.input_tokens,
      output_tokens: before.output_tokens + usage.output_tokens,
      turns: before.turns + 1,
    } satisfies SessionUsage,
    { sessionId },
  );
}
