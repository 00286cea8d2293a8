// What one turn has come to so far, in one place: its steps (src/agent/turn-loop.ts) add to it,
// its failure is classified into it (src/agent/turn-end.ts), and its result is read from it.
import type { Completion } from "../llm/model-call.js";
import type { WriteOp } from "../store/ops.js";
import type { OverflowState, TurnFailure } from "./turn-failure.js";
import type { TurnResult, TurnStatus } from "./turn-types.js";

export class TurnRun {
  /** What the model said that ends the turn, continuations included, in order. */
  readonly replyParts: string[] = [];
  readonly usage = { input_tokens: 0, output_tokens: 0 };
  /** The last call's input tokens, for the compressor; null after a compression. */
  lastInputTokens: number | null = null;
  finishReason: string | null = null;
  partial = false;
  /** Model calls made. */
  iterations = 0;
  continuations = 0;
  status: TurnStatus = "completed";
  failure: TurnFailure | null = null;
  /** Set once the provider said the context is too long this turn. */
  overflow: OverflowState | null = null;
  model: TurnResult["model"] = null;
  /** The final answer, committed with the turn's end (one durable commit fewer per turn). */
  answer: WriteOp | null = null;
  /** The compressor's bookkeeping for this turn. */
  readonly compression = { attempts: 0, overflowBypassUsed: false };

  /** Count a model call's answer: its model, finish reason and tokens. */
  answered(completion: Completion): void {
    this.model = { provider: completion.provider, model: completion.model };
    this.finishReason = completion.finish_reason;
    this.lastInputTokens = completion.usage?.input_tokens ?? null;
    this.usage.input_tokens += completion.usage?.input_tokens ?? 0;
    this.usage.output_tokens += completion.usage?.output_tokens ?? 0;
  }

  reply(): string {
    return this.replyParts.join("");
  }
}
