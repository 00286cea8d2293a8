// The failure of a call its model's open circuit refused: no request was sent. Its code is
// `circuit_open`, its hint says when the model is tried again, and its retry-after is that wait,
// so a gateway answers with Retry-After and the router moves on to the next model at once.

import type { ErrorReason } from "./classified-error.js";
import { type ClassifiedError, ProviderError } from "./classified-error.js";
import { REASON_FLAGS } from "./classify-rules.js";
import type { Target } from "./route-events.js";

export const CIRCUIT_OPEN = "circuit_open";

export function circuitOpenError(
  target: Target,
  open: { retry_at: number; reason: ErrorReason | null },
  now: number,
): ProviderError {
  const wait = Math.max(0, open.retry_at - now);
  const when = `${new Date(open.retry_at).toISOString()} (in ${Math.ceil(wait / 1000)} s)`;
  const classified: ClassifiedError = {
    reason: "circuit_open",
    ...REASON_FLAGS.circuit_open,
    retry_after_ms: wait,
    status: null,
    message: `its circuit breaker is open after repeated failures${
      open.reason === null ? "" : ` (${open.reason})`
    }, so it was not called; it is tried again at ${when}`,
  };
  const error = new ProviderError(classified, target.provider, target.model, {
    code: CIRCUIT_OPEN,
    hint: `${target.provider}/${target.model} gets one probe call at ${when}; a fallback model (fallback: in config.yaml) answers meanwhile; tenax status shows each model's circuit`,
  });
  error.data.layer = "breaker";
  error.data.retry_at = open.retry_at;
  return error;
}
