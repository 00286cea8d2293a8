// The resilience core end to end over real HTTP: real simulators, the real OpenAI SDK client, the
// config schema, key pools, retries and fallback. Time is fake (sleeps return at once and move the
// clock) so waits of minutes are asserted exactly and run instantly.
import { describe, expect, it } from "vitest";
import { startAnthropicPeer } from "../../test/helpers/anthropic-peer.js";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { err, hello, keyOf, open, recorder, rejected, runtime, sim } from "../../test/helpers/router.js";
import { keyFingerprint } from "./key-fingerprint.js";
import type { RouteRequest } from "./router.js";

describe("credential rotation", () => {
  it("rotates to the second key after a 401 on the first; the simulator sees the second key", async () => {
    const s = await sim();
    s.script([
      err(
        401,
        {},
        {
          error: {
            message: "Incorrect API key provided",
            type: "invalid_request_error",
            code: "invalid_api_key",
          },
        },
      ),
    ]);
    const rt = await runtime({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-first", "sk-second"] } },
    });
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.text).toContain("hello there");
    expect(s.requests().map(keyOf)).toEqual(["sk-first", "sk-second"]);
    expect(rec.status()).toEqual([
      expect.objectContaining({
        type: "credential_rotated",
        layer: "credentials",
        from: keyFingerprint("sk-first"),
        reason: "auth",
        verdict: "disabled",
      }),
    ]);
    // The dead key stays out for the next call too: it is never sent again.
    await rt.router.turn().complete(hello);
    expect(s.requests().map(keyOf)).toEqual(["sk-first", "sk-second", "sk-second"]);
    const state = await rt.router.runtime("main").pool.state(Date.now());
    expect(state.map((k) => k.status)).toEqual(["disabled", "ok"]);
    expect(JSON.stringify(state)).not.toContain("sk-");
  });

  it("a rate-limited key cools until its reset while the next key answers at once", async () => {
    const s = await sim();
    s.script([
      err(
        429,
        { "retry-after": "20" },
        { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
      ),
    ]);
    const deps = fakeDeps();
    const rt = await runtime(
      {
        model: { provider: "main", name: "echo" },
        providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-a", "sk-b"] } },
      },
      deps,
    );
    const rec = recorder();
    await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(s.requests().map(keyOf)).toEqual(["sk-a", "sk-b"]);
    expect(deps.delays).toEqual([]); // no sleeping while another key is free
    // The event says how long the key cools, and which attempt of the budget it ended (the trail's fields).
    expect(rec.status()[0]).toMatchObject({
      type: "credential_rotated",
      provider: "main",
      model: "echo",
      cooldown_ms: 20_000,
      attempt: 1,
      max_attempts: 4,
    });
    const [a] = await rt.router.runtime("main").pool.state(deps.clock.now());
    expect(a).toMatchObject({
      status: "cooling",
      reason: "rate_limit",
      cooldown_until: deps.clock.now() + 20_000,
    });
  });
});

describe("retry-after", () => {
  it("is honoured on a single key, and a long one is capped so one key is never locked out for long", async () => {
    const s = await sim();
    const limited = {
      error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" },
    };
    s.script([err(429, { "retry-after": "5" }, limited), err(429, { "retry-after": "3600" }, limited)]);
    const deps = fakeDeps();
    const rt = await runtime(
      {
        model: { provider: "main", name: "echo" },
        providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-only"] } },
        retry: { max_attempts: 4 },
      },
      deps,
    );
    const rec = recorder();
    await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(s.requests()).toHaveLength(3);
    // 5 s asked: waited 5 s plus at most 1 s of spread. 3600 s asked: the last key cools for 30 s only.
    expect(deps.delays).toHaveLength(2);
    expect(deps.delays[0]).toBeGreaterThanOrEqual(5_000);
    expect(deps.delays[0]).toBeLessThanOrEqual(6_000);
    expect(deps.delays[1]).toBeGreaterThanOrEqual(30_000);
    expect(deps.delays[1]).toBeLessThanOrEqual(31_000);
    const retries = rec.status().filter((e) => e.type === "retry");
    expect(retries).toHaveLength(2);
    expect(retries[0]).toMatchObject({
      reason: "rate_limit",
      provider: "main",
      model: "echo",
      attempt: 1,
      retry_after_ms: 5_000,
    });
    expect(retries[0]).toHaveProperty("context_tokens", expect.any(Number));
    expect(retries[0]).toHaveProperty("next_attempt_at", expect.any(Number));
  });

  it("past the cap an overload moves on to the fallback instead of sleeping", async () => {
    const primary = await sim();
    const backup = await sim();
    primary.script([
      err(
        503,
        { "retry-after": "600" },
        { error: { message: "The server is overloaded", type: "server_error" } },
      ),
    ]);
    const deps = fakeDeps();
    const rt = await runtime(
      {
        model: { provider: "main", name: "echo" },
        providers: {
          main: { type: "simulator", base_url: primary.url, api_keys: ["sk-main"] },
          backup: { type: "simulator", base_url: backup.url, api_keys: ["sk-backup"] },
        },
        fallback: [{ provider: "backup", name: "echo" }],
      },
      deps,
    );
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(deps.delays).toEqual([]);
    expect(rec.types()).toEqual(["retry_exhausted", "fallback"]);
    expect(rec.status()[0]).toMatchObject({ why: "retry_after_too_long", reason: "overloaded" });
  });
});

describe("fallback", () => {
  async function pair(deps = fakeDeps()) {
    const primary = await sim();
    const backup = await sim({ "backup-model": { context_window: 64_000 } });
    const rt = await runtime(
      {
        model: { provider: "main", name: "echo" },
        providers: {
          main: { type: "simulator", base_url: primary.url, api_keys: ["sk-main"] },
          backup: {
            type: "simulator",
            base_url: backup.url,
            api_keys: ["sk-backup"],
            models: { "backup-model": { context_window: 64_000, max_output_tokens: 4096 } },
          },
        },
        fallback: [{ provider: "backup", name: "backup-model" }],
        retry: { max_attempts: 3 },
      },
      deps,
    );
    return { primary, backup, rt, deps };
  }

  const unavailable = err(503, {}, { error: { message: "Service Unavailable", type: "server_error" } });

  it("a persistent 503 ends on the fallback model, and the next turn's first request goes to the primary", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([unavailable, unavailable, unavailable]);
    const rec = recorder();
    const turn = rt.router.turn();
    const done = await turn.complete(hello, { onEvent: rec.onEvent });
    expect(done).toMatchObject({ provider: "backup", model: "backup-model" });
    expect(primary.requests()).toHaveLength(3);
    expect(backup.requests()).toHaveLength(1);
    const sent = backup.requests()[0]?.body as { model: string; messages: unknown[] };
    expect(sent.model).toBe("backup-model");
    // The whole history travels to the fallback model.
    expect(sent.messages).toEqual([{ role: "user", content: "hello there" }]);
    expect(rec.types()).toEqual(["retry", "retry", "retry_exhausted", "fallback"]);
    expect(rec.status().at(-1)).toMatchObject({
      from: { provider: "main", model: "echo" },
      to: { provider: "backup", model: "backup-model" },
      reason: "server_error",
    });
    // The rest of this turn stays on the fallback, without going back through the primary.
    await turn.complete(hello);
    expect(primary.requests()).toHaveLength(3);
    expect(backup.requests()).toHaveLength(2);
    // A new turn starts on the primary.
    const next = await rt.router.turn().complete(hello);
    expect(next.provider).toBe("main");
    expect(primary.requests()).toHaveLength(4);
  });

  it("falls back at most once per turn", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([unavailable, unavailable, unavailable]);
    const turn = rt.router.turn();
    await turn.complete(hello);
    backup.script([unavailable, unavailable, unavailable]);
    const rec = recorder();
    const error = await rejected(turn.complete(hello, { onEvent: rec.onEvent }));
    expect(error.provider).toBe("backup");
    expect(rec.types()).not.toContain("fallback");
    expect(primary.requests()).toHaveLength(3);
  });

  it("a content-policy block falls back at once, without retrying", async () => {
    const { primary, backup, rt, deps } = await pair();
    primary.script([
      err(
        400,
        {},
        {
          error: {
            message: "blocked by policy",
            type: "invalid_request_error",
            code: "content_policy_violation",
          },
        },
      ),
    ]);
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(primary.requests()).toHaveLength(1);
    expect(backup.requests()).toHaveLength(1);
    expect(deps.delays).toEqual([]);
    expect(rec.types()).toEqual(["fallback"]);
  });

  it("a request error never falls back: another model would fail the same way", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([
      err(
        400,
        {},
        { error: { message: "Unknown parameter: 'max_tokens_x'", type: "invalid_request_error" } },
      ),
    ]);
    const error = await rejected(rt.router.turn().complete(hello));
    expect(error.classified.reason).toBe("invalid_request");
    expect(backup.requests()).toHaveLength(0);
    expect(primary.requests()).toHaveLength(1);
  });

  it("the fallback provider's 429 cools only its own pool, never the primary's keys", async () => {
    const { primary, backup, rt, deps } = await pair();
    primary.script([unavailable, unavailable, unavailable]);
    backup.script([
      err(429, { "retry-after": "2" }, { error: { message: "Rate limit reached", type: "requests" } }),
    ]);
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    const credentialEvents = rec.status().filter((e) => e.layer === "credentials");
    expect(credentialEvents.map((e) => [e.type, "provider" in e ? e.provider : null])).toEqual([
      ["credential_rotated", "backup"],
      ["credentials_exhausted", "backup"],
    ]);
    // The primary's key never had a failure counted against it: a 503 is not the key's fault.
    const main = await rt.router.runtime("main").pool.state(deps.clock.now());
    expect(main).toEqual([expect.objectContaining({ status: "ok", failures: 0 })]);
  });

  it("skips a fallback model whose window cannot hold the conversation, and says so", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([unavailable, unavailable, unavailable]);
    const long: RouteRequest = { messages: [{ role: "user", content: "x".repeat(300_000) }] };
    const rec = recorder();
    const error = await rejected(rt.router.turn().complete(long, { onEvent: rec.onEvent }));
    expect(error.provider).toBe("main");
    expect(backup.requests()).toHaveLength(0);
    expect(rec.types()).toEqual([
      "retry",
      "retry",
      "retry_exhausted",
      "fallback_skipped",
      "fallback_exhausted",
    ]);
    expect(rec.status()[3]).toMatchObject({ context_window: 64_000, candidate: { model: "backup-model" } });
  });

  it("a single dead key falls back instead of locking the turn out", async () => {
    const { primary, backup, rt } = await pair();
    primary.script([err(401, {}, { error: { message: "invalid x-api-key", type: "authentication_error" } })]);
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.provider).toBe("backup");
    expect(rec.types()).toEqual(["credential_rotated", "credentials_exhausted", "fallback"]);
    expect(backup.requests()).toHaveLength(1);
    // The next turn does not send the dead key again: the primary's pool is empty, so it falls back at once.
    await rt.router.turn().complete(hello);
    expect(primary.requests()).toHaveLength(1);
  });
});

describe("across provider types", () => {
  it("an Anthropic primary that stays overloaded falls back to an OpenAI-compatible model, with its own pool", async () => {
    const peer = await startAnthropicPeer();
    open.push(peer);
    const backup = await sim();
    const overloaded = {
      type: "error" as const,
      status: 529,
      error_type: "overloaded_error",
      message: "Overloaded",
    };
    peer.script([
      overloaded,
      { type: "stream_error", after_events: 4, error_type: "overloaded_error", message: "Overloaded" },
    ]);
    const deps = fakeDeps();
    const rt = await runtime(
      {
        model: { provider: "claude", name: "claude-test" },
        providers: {
          claude: { type: "anthropic", base_url: peer.url, api_keys: ["sk-ant-one"] },
          local: { type: "simulator", base_url: backup.url },
        },
        fallback: [{ provider: "local", name: "echo" }],
        retry: { max_attempts: 2 },
      },
      deps,
    );
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done).toMatchObject({ provider: "local", model: "echo" });
    expect(peer.requests()).toHaveLength(2);
    expect(rec.types()).toEqual(["retry", "retry_exhausted", "fallback"]);
    expect(rec.status()[0]).toMatchObject({ reason: "overloaded", provider: "claude", model: "claude-test" });
    // Overload waits at least 1 s (half its 2 s ceiling): never a hammering retry.
    expect(deps.delays[0]).toBeGreaterThanOrEqual(1_000);
    // Overload is the provider's trouble, not the key's: the key is not benched.
    const keys = await rt.router.runtime("claude").pool.state(deps.clock.now());
    expect(keys.map((k) => k.status)).toEqual(["ok"]);
  });
});

describe("output budget", () => {
  it("a turn's request carries the model's configured max_output_tokens, to Anthropic and to OpenAI-compatible servers", async () => {
    const peer = await startAnthropicPeer();
    open.push(peer);
    const s = await sim();
    const rt = await runtime({
      model: { provider: "claude", name: "claude-test" },
      providers: {
        claude: {
          type: "anthropic",
          base_url: peer.url,
          api_keys: ["sk-ant-one"],
          models: { "claude-test": { context_window: 200_000, max_output_tokens: 16_000 } },
        },
        local: {
          type: "simulator",
          base_url: s.url,
          models: { echo: { context_window: 8_000, max_output_tokens: 700 } },
        },
      },
    });
    const maxTokens = (r: { body: unknown } | undefined) =>
      (r?.body as { max_tokens?: number } | undefined)?.max_tokens;
    await rt.router.turn().complete(hello);
    expect(maxTokens(peer.requests()[0])).toBe(16_000);
    await rt.router.turn({ provider: "local", model: "echo" }).complete(hello);
    expect(maxTokens(s.requests()[0])).toBe(700);
    // A caller's own budget (a side task's) wins over the model's.
    await rt.router.turn({ provider: "local", model: "echo" }).complete({ ...hello, max_output_tokens: 50 });
    expect(maxTokens(s.requests()[1])).toBe(50);
  });
});
