// The model call's span as the router makes it: one per target called, under the span active where
// the turn runs; the failing primary's retries as events and its classified reason as the error;
// the fallback's span naming the model it took over from and why. Time is fake.
import { describe, expect, it } from "vitest";
import { err, hello, runtime, sim } from "../../test/helpers/router.js";
import { recordTraces } from "../../test/helpers/trace-recorder.js";
import { startSpan, tracingOn, withSpan } from "../core/trace.js";

describe("model call spans", () => {
  it("a primary that keeps failing and the fallback that answers: two chat spans under the turn's", async () => {
    const traces = recordTraces();
    const primary = await sim();
    const backup = await sim({ "backup-model": { context_window: 64_000 } });
    const rt = await runtime({
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
    });
    primary.script([err(503), err(503), err(503)]);
    const turn = startSpan("turn");
    const done = await withSpan(turn, () => rt.router.turn().complete(hello));
    turn.end();
    expect(done.model).toBe("backup-model");

    const [failed, answered] = traces.named("chat echo").concat(traces.named("chat backup-model"));
    expect(failed?.parent).toBe(turn);
    expect(failed).toMatchObject({ error: "server_error", ended: true });
    expect(failed?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "simulator",
      "gen_ai.request.model": "echo",
      "tenax.provider": "main",
      "tenax.attempts": 3,
      "http.response.status_code": 503,
    });
    expect(failed?.events.map((e) => e.name)).toEqual(["retry", "retry", "retry_exhausted"]);
    expect(failed?.events[0]?.attributes).toMatchObject({
      "tenax.attempt": 1,
      "tenax.reason": "server_error",
    });

    expect(answered?.parent).toBe(turn);
    expect(answered).toMatchObject({ error: null, ended: true });
    expect(answered?.attributes).toMatchObject({
      "gen_ai.request.model": "backup-model",
      "gen_ai.response.model": "backup-model",
      "tenax.fallback.from": "main/echo",
      "tenax.fallback.reason": "server_error",
      "tenax.attempts": 1,
    });
    // Nothing of the conversation.
    expect(JSON.stringify(traces.spans.map((s) => [s.attributes, s.events]))).not.toContain("hello there");
  });

  it("with tracing off every span is the one shared no-op, and the call is the same", async () => {
    expect(tracingOn()).toBe(false);
    const s = await sim();
    const rt = await runtime({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: s.url } },
    });
    const span = startSpan("turn");
    expect(startSpan("another")).toBe(span);
    expect(await withSpan(span, () => rt.router.turn().complete(hello))).toMatchObject({
      text: "echo: hello there",
    });
  });
});
