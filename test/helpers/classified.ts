// A classified provider failure for tests: the reason's own retry rule, every other flag off.
import type { ClassifiedError, ErrorReason } from "../../src/llm/classified-error.js";
import { RETRY_POLICY } from "../../src/llm/retry-policy.js";

export function classifiedFailure(
  reason: ErrorReason,
  extra: Partial<ClassifiedError> = {},
): ClassifiedError {
  return {
    reason,
    retryable: RETRY_POLICY[reason].retry,
    rotate_credential: false,
    fallback: false,
    compress: false,
    retry_after_ms: null,
    status: null,
    message: `simulated ${reason}`,
    ...extra,
  };
}
