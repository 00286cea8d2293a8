import { describe, expect, it } from "vitest";
import { classifiedFailure } from "../../test/helpers/classified.js";
import { fakeDeps, FAKE_START as START } from "../../test/helpers/fake-time.js";
import { type Deps, realSleep } from "../core/deps.js";
import { type ClassifiedError, type ErrorReason, ProviderError } from "./classified-error.js";
import { giveUpReason, type RetryEvent, type WithRetryOptions, withRetry } from "./retry.js";
import { backoffCeilingMs, RETRY_POLICY } from "./retry-policy.js";

const context = { provider: "sim", model: "sim-small", context_tokens: 1234 };

const classified = classifiedFailure;

/** A call that fails with the given errors in turn, then resolves "ok"; it counts its invocations. */
function scripted(...failures: unknown[]) {
  const calls: number[] = [];
  const fn = async (attempt: number) => {
    calls.push(attempt);
    const next = failures.shift();
    if (next !== undefined) throw next;
    return "ok";
  };
  return { fn, calls };
}

const failing = (reason: ErrorReason, extra: Partial<ClassifiedError> = {}) =>
  new ProviderError(classified(reason, extra), context.provider, context.model);

function options(deps: Deps, extra: Partial<WithRetryOptions> = {}): WithRetryOptions {
  return {
    deps,
    maxAttempts: 4,
    classify: () => classified("unknown", { retryable: false }),
    context,
    ...extra,
  };
}

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  throw new Error("expected a rejection");
}

describe("withRetry", () => {
  it("retries transient failures with growing delays and returns the result", async () => {
    const deps = fakeDeps(3);
    const { fn, calls } = scripted(failing("timeout"), failing("timeout"), failing("timeout"));
    await expect(withRetry(fn, options(deps))).resolves.toBe("ok");
    expect(calls).toEqual([1, 2, 3, 4]);
    expect(deps.delays).toHaveLength(3);
    deps.delays.forEach((delay, i) => {
      const ceiling = backoffCeilingMs(RETRY_POLICY.timeout, i + 1);
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThanOrEqual(ceiling);
    });
  });

  it("makes exactly max_attempts calls, then rejects with attempts_spent and the last classified error", async () => {
    for (const maxAttempts of [1, 2, 4, 7]) {
      const deps = fakeDeps();
      const events: RetryEvent[] = [];
      const { fn, calls } = scripted(
        ...Array.from({ length: 10 }, () => failing("server_error", { status: 503 })),
      );
      const error = await rejection(
        withRetry(fn, options(deps, { maxAttempts, onEvent: (e) => events.push(e) })),
      );
      expect(calls).toHaveLength(maxAttempts);
      expect(deps.delays).toHaveLength(maxAttempts - 1);
      expect(error.classified.reason).toBe("server_error");
      expect(error.classified.status).toBe(503);
      expect(giveUpReason(error)).toBe("attempts_spent");
      expect(error.data).toMatchObject({ give_up: "attempts_spent", attempts: maxAttempts, provider: "sim" });
      expect(events.at(-1)).toMatchObject({
        type: "retry_exhausted",
        why: "attempts_spent",
        attempt: maxAttempts,
      });
    }
  });

  it("classifies foreign errors with the given classifier and keeps the original as the cause", async () => {
    const deps = fakeDeps();
    const raw = new Error("ECONNRESET");
    const seen: unknown[] = [];
    const classify = (error: unknown) => {
      seen.push(error);
      return classified("stream_drop");
    };
    const { fn, calls } = scripted(raw, raw);
    const error = await rejection(withRetry(fn, options(deps, { maxAttempts: 2, classify })));
    expect(calls).toHaveLength(2);
    expect(seen).toEqual([raw, raw]);
    expect(error.classified.reason).toBe("stream_drop");
    expect(error.cause).toBe(raw);
  });

  it.each<ErrorReason>([
    "auth",
    "auth_permanent",
    "billing",
    "context_overflow",
    "payload_too_large",
    "long_context_tier",
    "model_not_found",
    "invalid_request",
    "content_policy_blocked",
    "format_error",
    "thinking_signature",
  ])("never calls again after %s", async (reason) => {
    const deps = fakeDeps();
    const events: RetryEvent[] = [];
    const { fn, calls } = scripted(failing(reason, { retryable: true }), failing(reason));
    const error = await rejection(withRetry(fn, options(deps, { onEvent: (e) => events.push(e) })));
    expect(calls).toEqual([1]);
    expect(deps.delays).toEqual([]);
    expect(events).toEqual([]);
    expect(error.classified.reason).toBe(reason);
    expect(giveUpReason(error)).toBe("not_retryable");
  });

  it("emits retry_exhausted when a non-retryable failure follows retries", async () => {
    const deps = fakeDeps();
    const events: RetryEvent[] = [];
    const { fn, calls } = scripted(failing("timeout"), failing("auth", { status: 401 }));
    const error = await rejection(withRetry(fn, options(deps, { onEvent: (e) => events.push(e) })));
    expect(calls).toEqual([1, 2]);
    expect(giveUpReason(error)).toBe("not_retryable");
    expect(events.map((e) => e.type)).toEqual(["retry", "retry_exhausted"]);
  });

  it("honours a provider's retry-after as the floor", async () => {
    const deps = fakeDeps();
    const { fn } = scripted(failing("rate_limit", { status: 429, retry_after_ms: 20_000 }));
    await expect(withRetry(fn, options(deps))).resolves.toBe("ok");
    expect(deps.delays).toHaveLength(1);
    expect(deps.delays[0]).toBeGreaterThanOrEqual(20_000);
    expect(deps.delays[0]).toBeLessThanOrEqual(21_000);
  });

  it("gives up at once, without sleeping, when the retry-after is past the cap", async () => {
    const deps = fakeDeps();
    const events: RetryEvent[] = [];
    const { fn, calls } = scripted(failing("rate_limit", { status: 429, retry_after_ms: 3_600_000 }));
    const error = await rejection(
      withRetry(fn, options(deps, { maxRetryAfterMs: 60_000, onEvent: (e) => events.push(e) })),
    );
    expect(calls).toEqual([1]);
    expect(deps.delays).toEqual([]);
    expect(giveUpReason(error)).toBe("retry_after_too_long");
    expect(error.classified.retry_after_ms).toBe(3_600_000);
    expect(events).toEqual([
      expect.objectContaining({ type: "retry_exhausted", why: "retry_after_too_long" }),
    ]);
  });

  it("caps the retry-after at 60 s by default", async () => {
    const deps = fakeDeps();
    const { fn } = scripted(failing("rate_limit", { retry_after_ms: 60_001 }));
    expect(giveUpReason(await rejection(withRetry(fn, options(deps))))).toBe("retry_after_too_long");
    const within = scripted(failing("rate_limit", { retry_after_ms: 60_000 }));
    await expect(withRetry(within.fn, options(fakeDeps()))).resolves.toBe("ok");
  });

  it("emits an event with every field before each sleep", async () => {
    const deps = fakeDeps(9);
    const events: RetryEvent[] = [];
    const { fn } = scripted(
      failing("overloaded", { status: 529, message: "Overloaded" }),
      failing("rate_limit", { status: 429, retry_after_ms: 3_000, message: "slow down" }),
    );
    const onEvent = (e: RetryEvent) => {
      events.push(e);
      deps.log.push(`event ${e.type} ${e.type === "retry" ? e.delay_ms : ""}`);
    };
    await expect(withRetry(fn, options(deps, { onEvent }))).resolves.toBe("ok");
    const [first, second] = deps.delays as [number, number];
    expect(deps.log).toEqual([
      `event retry ${first}`,
      `sleep ${first}`,
      `event retry ${second}`,
      `sleep ${second}`,
    ]);
    expect(events).toEqual([
      {
        type: "retry",
        reason: "overloaded",
        provider: "sim",
        model: "sim-small",
        attempt: 1,
        max_attempts: 4,
        elapsed_ms: 0,
        delay_ms: first,
        next_attempt_at: START + first,
        context_tokens: 1234,
        retry_after_ms: null,
        status: 529,
        message: "Overloaded",
      },
      {
        type: "retry",
        reason: "rate_limit",
        provider: "sim",
        model: "sim-small",
        attempt: 2,
        max_attempts: 4,
        elapsed_ms: first,
        delay_ms: second,
        next_attempt_at: START + first + second,
        context_tokens: 1234,
        retry_after_ms: 3_000,
        status: 429,
        message: "slow down",
      },
    ]);
  });

  it("hands the call the caller's signal, and none when the caller gave none", async () => {
    const seen: Array<AbortSignal | undefined> = [];
    const fn = async (_attempt: number, signal: AbortSignal | undefined) => {
      seen.push(signal);
      return "ok";
    };
    const controller = new AbortController();
    await withRetry(fn, options(fakeDeps(), { signal: controller.signal }));
    await withRetry(fn, options(fakeDeps()));
    expect(seen).toEqual([controller.signal, undefined]);
  });

  it("does not call at all when the signal is already aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const { fn, calls } = scripted();
    const error = await rejection(withRetry(fn, options(fakeDeps(), { signal: controller.signal })));
    expect(calls).toEqual([]);
    expect(error.classified.reason).toBe("aborted");
    expect(giveUpReason(error)).toBe("aborted");
  });

  it("rejects at once when aborted during the call, whatever the call threw", async () => {
    const deps = fakeDeps();
    const controller = new AbortController();
    const calls: number[] = [];
    const fn = async (attempt: number) => {
      calls.push(attempt);
      controller.abort(new Error("user pressed stop"));
      // The transport saw a reset; the classifier would call it a retryable stream drop.
      throw new Error("socket hang up");
    };
    const events: RetryEvent[] = [];
    const error = await rejection(
      withRetry(
        fn,
        options(deps, {
          signal: controller.signal,
          classify: () => classified("stream_drop"),
          onEvent: (e) => events.push(e),
        }),
      ),
    );
    expect(calls).toEqual([1]);
    expect(deps.delays).toEqual([]);
    expect(events).toEqual([]);
    expect(error.classified.reason).toBe("aborted");
    expect(giveUpReason(error)).toBe("aborted");
    expect((error.cause as Error).message).toBe("user pressed stop");
  });

  it("treats a failure classified as aborted as an abort", async () => {
    const { fn, calls } = scripted(failing("aborted"), failing("aborted"));
    const error = await rejection(withRetry(fn, options(fakeDeps())));
    expect(calls).toEqual([1]);
    expect(giveUpReason(error)).toBe("aborted");
  });

  it("rejects at once when aborted during the sleep and never calls again", async () => {
    const controller = new AbortController();
    const base = fakeDeps();
    const deps: Deps = {
      ...base,
      sleep: (ms, signal) =>
        new Promise<void>((_, reject) => {
          base.delays.push(ms);
          signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
          controller.abort();
        }),
    };
    const { fn, calls } = scripted(failing("timeout"), failing("timeout"));
    const error = await rejection(withRetry(fn, options(deps, { signal: controller.signal })));
    expect(calls).toEqual([1]);
    expect(base.delays).toHaveLength(1);
    expect(giveUpReason(error)).toBe("aborted");
  });

  it("with the real sleep, an abort during a long wait rejects within a few ms", async () => {
    const controller = new AbortController();
    let calls = 0;
    const deps: Deps = { clock: { now: () => Date.now() }, random: () => 0.5, sleep: realSleep };
    const started = performance.now();
    const pending = withRetry(
      async () => {
        calls++;
        throw failing("overloaded"); // a 1.5 s wait on the first retry
      },
      options(deps, { signal: controller.signal, onEvent: () => setTimeout(() => controller.abort(), 5) }),
    );
    const error = await rejection(pending);
    const took = performance.now() - started;
    expect(calls).toBe(1);
    expect(giveUpReason(error)).toBe("aborted");
    expect(took).toBeLessThan(200);
  });

  it("two processes with different seeds do not retry in lock-step", async () => {
    async function delaysFor(seed: number): Promise<number[]> {
      const deps = fakeDeps(seed);
      const { fn } = scripted(...Array.from({ length: 8 }, () => failing("rate_limit", { status: 429 })));
      await rejection(withRetry(fn, options(deps, { maxAttempts: 6 })));
      return deps.delays;
    }
    const a = await delaysFor(101);
    const b = await delaysFor(202);
    expect(a).toHaveLength(5);
    expect(b).toHaveLength(5);
    expect(a).not.toEqual(b);
    // Not just different somewhere: they differ at every step, so the processes never line up.
    for (const [i, delay] of a.entries()) expect(delay).not.toBe(b[i]);
  });

  it("two processes told the same retry-after do not come back in the same millisecond", async () => {
    async function delayFor(seed: number): Promise<number | undefined> {
      const deps = fakeDeps(seed);
      const { fn } = scripted(failing("rate_limit", { status: 429, retry_after_ms: 10_000 }));
      await withRetry(fn, options(deps));
      return deps.delays[0];
    }
    const a = await delayFor(101);
    const b = await delayFor(202);
    expect(a).toBeGreaterThanOrEqual(10_000);
    expect(b).toBeGreaterThanOrEqual(10_000);
    expect(a).not.toBe(b);
  });

  it("refuses a nonsensical max_attempts", async () => {
    await expect(withRetry(async () => "ok", options(fakeDeps(), { maxAttempts: 0 }))).rejects.toThrow(
      RangeError,
    );
  });
});
