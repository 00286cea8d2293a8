// A failed turn as the CLI shows it: the turn's own failure (`TurnResult.failure`, built once by the
// turn loop), plus what only the retry layer's give-up event says (how many attempts, over how
// long).
import type { TurnFailure as Failure } from "../../agent/turn-failure.js";
import type { GaveUp } from "./event-lines.js";
import type { TurnFailure } from "./failure-hints.js";

export function turnFailure(
  failure: Failure | null,
  error: string | null,
  gaveUp: GaveUp | null,
): TurnFailure {
  const classified = failure?.classified ?? null;
  const target = failure?.target ?? null;
  const same =
    gaveUp !== null && target !== null && gaveUp.provider === target.provider && gaveUp.model === target.model
      ? gaveUp
      : null;
  return {
    layer: failure?.layer ?? "agent",
    reason: classified?.reason ?? null,
    provider: classified === null ? null : (target?.provider ?? null),
    model: classified === null ? null : (target?.model ?? null),
    status: classified?.status ?? same?.status ?? null,
    message: classified?.message ?? failure?.message ?? error ?? "the turn failed",
    next: failure?.next ?? null,
    attempts: same?.attempt ?? null,
    elapsed_ms: same?.elapsed_ms ?? null,
  };
}
