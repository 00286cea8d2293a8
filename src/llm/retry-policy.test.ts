import { describe, expect, it } from "vitest";
import { classifiedFailure } from "../../test/helpers/classified.js";
import { seededRandom } from "../core/deps.js";
import { ERROR_REASONS } from "./classified-error.js";
import {
  backoffCeilingMs,
  DEFAULT_MAX_RETRY_AFTER_MS,
  nextDelay,
  RETRY_POLICY,
  type RetryDecision,
  retryAfterSpreadMs,
} from "./retry-policy.js";

const SEEDS = Array.from({ length: 50 }, (_, i) => i + 1);

const failure = classifiedFailure;

const opts = (seed: number, maxAttempts = 20) => ({
  random: seededRandom(seed),
  maxAttempts,
  maxRetryAfterMs: DEFAULT_MAX_RETRY_AFTER_MS,
});

function delayOf(decision: RetryDecision): number {
  if (decision.action !== "retry") throw new Error(`expected a retry, got give_up ${decision.why}`);
  return decision.delayMs;
}

describe("nextDelay", () => {
  it(`grows exponentially within the equal-jitter bounds (seeds ${SEEDS[0]}..${SEEDS.at(-1)})`, () => {
    console.log(`retry-policy: checking seeds ${SEEDS[0]}..${SEEDS.at(-1)}`);
    for (const reason of [
      "timeout",
      "stream_drop",
      "unreachable",
      "server_error",
      "overloaded",
      "rate_limit",
    ] as const) {
      const policy = RETRY_POLICY[reason];
      for (const seed of SEEDS) {
        const options = opts(seed);
        let previous = 0;
        for (let attempt = 1; attempt < options.maxAttempts; attempt++) {
          const delay = delayOf(nextDelay(failure(reason), attempt, options));
          const ceiling = Math.min(policy.max_ms, policy.base_ms * 2 ** (attempt - 1));
          expect(delay, `${reason} seed ${seed} attempt ${attempt}`).toBeGreaterThanOrEqual(
            Math.round(ceiling / 2),
          );
          expect(delay, `${reason} seed ${seed} attempt ${attempt}`).toBeLessThanOrEqual(ceiling);
          // Equal jitter: until the cap, each attempt's floor is the previous one's ceiling, so waits
          // never shrink while they grow.
          if (policy.base_ms * 2 ** (attempt - 1) <= policy.max_ms)
            expect(delay).toBeGreaterThanOrEqual(previous);
          previous = delay;
        }
      }
    }
  });

  it("doubles the ceiling per attempt up to the cap", () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((a) => backoffCeilingMs(RETRY_POLICY.timeout, a))).toEqual([
      250, 500, 1000, 2000, 4000, 5000, 5000,
    ]);
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffCeilingMs(RETRY_POLICY.overloaded, a))).toEqual([
      2000, 4000, 8000, 16000, 30000, 30000,
    ]);
  });

  it("waits longer for overload than for a server error, and longer for that than for a timeout, at every attempt", () => {
    // Compare the bounds, not samples: random() = 0 gives the least wait, values near 1 the most.
    const low = { random: () => 0, maxAttempts: 21, maxRetryAfterMs: DEFAULT_MAX_RETRY_AFTER_MS };
    const high = { random: () => 0.999999, maxAttempts: 21, maxRetryAfterMs: DEFAULT_MAX_RETRY_AFTER_MS };
    for (let attempt = 1; attempt <= 20; attempt++) {
      const overloadMin = delayOf(nextDelay(failure("overloaded"), attempt, low));
      const serverMin = delayOf(nextDelay(failure("server_error"), attempt, low));
      const serverMax = delayOf(nextDelay(failure("server_error"), attempt, high));
      const timeoutMax = delayOf(nextDelay(failure("timeout"), attempt, high));
      expect(overloadMin, `attempt ${attempt}`).toBeGreaterThanOrEqual(serverMax);
      expect(serverMin, `attempt ${attempt}`).toBeGreaterThanOrEqual(timeoutMax);
      expect(overloadMin).toBeGreaterThan(timeoutMax);
    }
  });

  it("waits for an unreachable endpoint as for a server error: a server coming back takes seconds", () => {
    expect(RETRY_POLICY.unreachable).toEqual({ retry: true, base_ms: 1_000, max_ms: 15_000 });
    expect([1, 2, 3, 4, 5].map((a) => backoffCeilingMs(RETRY_POLICY.unreachable, a))).toEqual([
      1000, 2000, 4000, 8000, 15000,
    ]);
    expect(nextDelay(failure("unreachable"), 3, opts(1)).action).toBe("retry");
  });

  it("honours a provider's retry-after as a floor with a small jitter", () => {
    for (const seed of SEEDS) {
      const delay = delayOf(nextDelay(failure("rate_limit", { retry_after_ms: 5_000 }), 1, opts(seed)));
      expect(delay).toBeGreaterThanOrEqual(5_000);
      expect(delay).toBeLessThanOrEqual(5_000 + retryAfterSpreadMs(5_000));
    }
    expect(retryAfterSpreadMs(5_000)).toBe(500);
    expect(retryAfterSpreadMs(0)).toBe(100);
    expect(retryAfterSpreadMs(60_000)).toBe(1_000);
  });

  it("keeps the backoff when it is already longer than a short retry-after", () => {
    const decision = nextDelay(failure("overloaded", { retry_after_ms: 10 }), 3, opts(7));
    expect(delayOf(decision)).toBeGreaterThanOrEqual(4_000);
  });

  it("honours a retry-after right at the cap and gives up at once past it", () => {
    const cap = { random: () => 0.5, maxAttempts: 4, maxRetryAfterMs: 30_000 };
    expect(
      delayOf(nextDelay(failure("rate_limit", { retry_after_ms: 30_000 }), 1, cap)),
    ).toBeGreaterThanOrEqual(30_000);
    expect(nextDelay(failure("rate_limit", { retry_after_ms: 30_001 }), 1, cap)).toEqual({
      action: "give_up",
      why: "retry_after_too_long",
    });
    // The same holds on the last attempt: the long wait is the more useful news for the key pool.
    expect(nextDelay(failure("rate_limit", { retry_after_ms: 90_000 }), 4, cap)).toEqual({
      action: "give_up",
      why: "retry_after_too_long",
    });
  });

  it("gives up at once on every reason the table does not retry, whatever the classifier says", () => {
    const never = ERROR_REASONS.filter((r) => !RETRY_POLICY[r].retry && r !== "aborted");
    expect(never).toEqual(
      expect.arrayContaining([
        "auth",
        "auth_permanent",
        "billing",
        "context_overflow",
        "invalid_request",
        "content_policy_blocked",
        "model_not_found",
        "payload_too_large",
      ]),
    );
    for (const reason of never) {
      expect(nextDelay(failure(reason, { retryable: true }), 1, opts(1))).toEqual({
        action: "give_up",
        why: "not_retryable",
      });
    }
  });

  it("gives up when the classifier marks a normally retried reason as not retryable", () => {
    expect(nextDelay(failure("rate_limit", { retryable: false }), 1, opts(1))).toEqual({
      action: "give_up",
      why: "not_retryable",
    });
  });

  it("never retries an abort", () => {
    expect(nextDelay(failure("aborted", { retryable: true }), 1, opts(1))).toEqual({
      action: "give_up",
      why: "aborted",
    });
  });

  it("gives up once the attempt that failed was the last one allowed", () => {
    const options = { random: () => 0.5, maxAttempts: 4, maxRetryAfterMs: DEFAULT_MAX_RETRY_AFTER_MS };
    expect(nextDelay(failure("timeout"), 3, options).action).toBe("retry");
    expect(nextDelay(failure("timeout"), 4, options)).toEqual({ action: "give_up", why: "attempts_spent" });
    expect(nextDelay(failure("timeout"), 1, { ...options, maxAttempts: 1 })).toEqual({
      action: "give_up",
      why: "attempts_spent",
    });
  });

  it("rejects a nonsensical attempt number", () => {
    expect(() => nextDelay(failure("timeout"), 0, opts(1))).toThrow(RangeError);
  });
});
