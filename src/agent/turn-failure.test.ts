import { describe, expect, it } from "vitest";
import { classifiedFailure } from "../../test/helpers/classified.js";
import { TenaxError } from "../core/errors.js";
import { type ErrorReason, ProviderError } from "../llm/classified-error.js";
import { StoreError } from "../store/errors.js";
import { guardrailFailure, interruptFailure, TurnInterrupt, thrownFailure } from "./turn-failure.js";

function gaveUp(reason: ErrorReason, data: Record<string, unknown> = {}, extra = {}): ProviderError {
  const error = new ProviderError(classifiedFailure(reason, extra), "main", "big-model");
  Object.assign(error.data, data);
  return error;
}

describe("which layer gave up, and why", () => {
  it("a first answer retrying cannot help is the provider's", () => {
    const failure = thrownFailure(gaveUp("invalid_request", { give_up: "not_retryable", attempts: 1 }));
    expect(failure).toMatchObject({
      code: "invalid_request",
      layer: "provider",
      target: { provider: "main", model: "big-model" },
      classified: { reason: "invalid_request" },
    });
    expect(failure.message).toBe(
      "the provider main/big-model failed and retrying cannot help: invalid_request: simulated invalid_request",
    );
  });

  it("our own process out of file descriptors is the process layer's, whoever's retries ran out", () => {
    const failure = thrownFailure(gaveUp("local_resources", { give_up: "attempts_spent", attempts: 4 }));
    expect(failure).toMatchObject({ code: "local_resources", layer: "process" });
    expect(failure.message).toBe(
      "Tenax's own process could not call main/big-model: simulated local_resources",
    );
    expect(failure.next).toMatch(/raise its open-file limit .*providers\.main is not at fault$/);
  });

  it("spent retries are the retry layer's, with the attempts and the time", () => {
    const failure = thrownFailure(
      gaveUp("server_error", { give_up: "attempts_spent", attempts: 4, elapsed_ms: 12_345 }),
    );
    expect(failure.layer).toBe("retry");
    expect(failure.message).toBe(
      "the retry layer gave up on main/big-model after 4 attempts in 12.3 s: server_error: simulated server_error",
    );
    expect(failure.next).toMatch(/^retry later/);
  });

  it("a reply a retry could not go on with is the retry layer's, and asks for the request again", () => {
    const failure = thrownFailure(gaveUp("reply_diverged", { give_up: "not_retryable", attempts: 2 }));
    expect(failure).toMatchObject({ layer: "retry", code: "reply_diverged", retry_after_ms: null });
    expect(failure.message).toBe(
      "the retry layer could not go on with the reply of main/big-model: reply_diverged: simulated reply_diverged",
    );
    expect(failure.next).toMatch(/^send the request again: the text received so far is not an answer/);
  });

  it("a provider's wait past the cap is the retry layer's too, and the wait is kept", () => {
    const failure = thrownFailure(
      gaveUp("rate_limit", { give_up: "retry_after_too_long" }, { retry_after_ms: 90_000 }),
    );
    expect(failure).toMatchObject({ layer: "retry", code: "rate_limit", retry_after_ms: 90_000 });
    expect(failure.message).toMatch(/asked to wait 90 s, longer than it waits in a turn/);
    expect(failure.next).toMatch(/^retry in 90 s/);
  });

  it("an exhausted key pool is the credentials layer's, even after the retry layer gave up on it", () => {
    const failure = thrownFailure(
      gaveUp(
        "auth",
        { layer: "credentials", give_up: "not_retryable" },
        { message: "every key of main is disabled (auth)" },
      ),
    );
    expect(failure).toMatchObject({ layer: "credentials", code: "auth" });
    expect(failure.message).toBe(
      "the credentials layer gave up on main/big-model: every key of main is disabled (auth)",
    );
    expect(failure.next).toMatch(/operator must replace the key in providers\.main\.api_keys/);
  });

  it("a walked fallback chain is the fallback layer's, naming every model tried", () => {
    const failure = thrownFailure(
      gaveUp("unreachable", {
        give_up: "attempts_spent",
        fallback_tried: [
          { provider: "main", model: "big-model", reason: "server_error" },
          { provider: "backup", model: "small", reason: "unreachable" },
        ],
      }),
    );
    expect(failure.layer).toBe("fallback");
    expect(failure.message).toMatch(/main\/big-model: server_error, backup\/small: unreachable/);
    expect(failure.next).toMatch(/^start the provider, or fix providers\.main\.base_url/);
  });

  it("an overflow is the compression layer's, saying whether compression ran", () => {
    const overflow = gaveUp("context_overflow", {}, { compress: true });
    expect(thrownFailure(overflow, { compressed: true }).message).toMatch(
      /compression ran but could not make it fit/,
    );
    expect(thrownFailure(overflow, { compressed: false }).message).toMatch(/compression could not run/);
    expect(thrownFailure(overflow).layer).toBe("compression");
    expect(thrownFailure(overflow).next).toMatch(/start a new session/);
  });

  it("a store that refused is the store's, with its hint; anything else is a bug", () => {
    const store = new TenaxError("store_disk_full", "the disk is full", { hint: "free some space" });
    expect(thrownFailure(store)).toMatchObject({
      code: "store_unavailable",
      layer: "store",
      next: "free some space",
      // A sticky failure waits for an operator; a database coming back says its own, shorter wait.
      retry_after_ms: 30_000,
    });
    const away = new StoreError("store_unavailable", "the database cannot be reached", {
      retryAfterMs: 2_000,
    });
    expect(thrownFailure(away)).toMatchObject({ code: "store_unavailable", retry_after_ms: 2_000 });
    expect(thrownFailure(new Error("boom"))).toMatchObject({ code: "turn_failed", layer: "agent" });
  });

  it("guardrails and the iteration budget halt with their own codes", () => {
    expect(guardrailFailure("max_iterations", "stopped: 50 model calls")).toMatchObject({
      code: "max_iterations",
      layer: "guardrails",
      message: "the guardrails halted the turn: stopped: 50 model calls",
    });
    expect(guardrailFailure("identical_call_limit", "x").next).toMatch(/agent\.identical_call_limit/);
  });

  it("an interrupt says why when its reason does, and only a drain asks to come back later", () => {
    const shutdown = interruptFailure(new TurnInterrupt("shutting_down", "the gateway is shutting down"));
    expect(shutdown).toMatchObject({ code: "shutting_down", layer: "interrupt", retry_after_ms: 5_000 });
    expect(shutdown.message).toBe(
      "turn interrupted: the gateway is shutting down; nothing of it runs any more",
    );
    expect(interruptFailure(new TurnInterrupt("client_closed", "gone")).retry_after_ms).toBeNull();
    const bare = interruptFailure(new DOMException("This operation was aborted", "AbortError"));
    expect(bare).toMatchObject({ code: "interrupted" });
    expect(bare.message).toBe("turn interrupted: stopped by its caller; nothing of it runs any more");
    expect(interruptFailure(new Error("interrupted by Ctrl-C")).message).toMatch(/interrupted by Ctrl-C/);
  });
});
