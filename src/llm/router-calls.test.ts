// Side tasks, concurrency limits and aborts, end to end over real HTTP: the auxiliary chain
// skipping models too small or too slow, max_concurrency as the simulator sees it, and an abort
// that closes the connection with nothing sent after it.
import { describe, expect, it } from "vitest";
import { type FakeDeps, fakeDeps } from "../../test/helpers/fake-time.js";
import { err, hello, recorder, rejected, runtime, sim } from "../../test/helpers/router.js";
import type { RouteRequest } from "./router.js";
import type { SimStep } from "./simulator/steps.js";

describe("auxiliary routing", () => {
  async function auxRuntime(chain: Array<{ name: string }>, timeout = 120) {
    const s = await sim({
      tiny: { context_window: 300 },
      small: { context_window: 2_000 },
      big: { context_window: 100_000 },
    });
    const models = {
      tiny: { context_window: 300, max_output_tokens: 100 },
      small: { context_window: 2_000, max_output_tokens: 500 },
      big: { context_window: 100_000, max_output_tokens: 500 },
    };
    const [first, ...rest] = chain;
    const rt = await runtime({
      model: { provider: "sim", name: "big" },
      providers: { sim: { type: "simulator", base_url: s.url, api_keys: ["sk-aux"], models } },
      auxiliary: {
        compression: {
          provider: "sim",
          name: first?.name,
          timeout,
          fallback: rest.map((c) => ({ provider: "sim", name: c.name })),
        },
      },
      retry: { max_attempts: 2 },
    });
    return { s, rt };
  }

  const history: RouteRequest = {
    messages: [{ role: "user", content: "summarize this: ".concat("word ".repeat(2_000)) }],
  };

  it("skips a model too small for the task, with an event that says why, and uses the next", async () => {
    const { s, rt } = await auxRuntime([{ name: "tiny" }, { name: "small" }, { name: "big" }]);
    const rec = recorder();
    const done = await rt.router.auxiliary("compression", history, { onEvent: rec.onEvent });
    expect(done?.model).toBe("big");
    expect(s.requests().map((r) => (r.body as { model: string }).model)).toEqual(["big"]);
    expect(rec.types()).toEqual(["auxiliary_skipped", "auxiliary_skipped", "auxiliary_routed"]);
    expect(rec.status()[0]).toMatchObject({
      task: "compression",
      why: "context_window",
      context_window: 300,
    });
    expect(rec.status()[1]).toMatchObject({ why: "context_window", context_window: 2_000 });
    expect(rec.status()[0]?.message).toContain("cannot hold");
  });

  it("an exhausted chain skips the task with a warning event and returns null", async () => {
    const { s, rt } = await auxRuntime([{ name: "tiny" }, { name: "small" }]);
    const rec = recorder();
    expect(await rt.router.auxiliary("compression", history, { onEvent: rec.onEvent })).toBeNull();
    expect(s.requests()).toHaveLength(0);
    expect(rec.types()).toEqual(["auxiliary_skipped", "auxiliary_skipped", "auxiliary_exhausted"]);
  });

  it("a candidate that hangs past the task's timeout is skipped for the next", async () => {
    // Long enough for the healthy second candidate to answer on a loaded machine.
    const { s, rt } = await auxRuntime([{ name: "big" }, { name: "big" }], 1.5);
    s.script([{ type: "hang", phase: "before_headers" }]);
    const rec = recorder();
    const done = await rt.router.auxiliary("compression", history, { onEvent: rec.onEvent });
    expect(done?.text).toBeTruthy();
    expect(rec.types()).toEqual(["auxiliary_routed", "auxiliary_skipped", "auxiliary_routed"]);
    expect(rec.status()[1]).toMatchObject({ why: "failed", reason: "timeout" });
    expect(s.requests()[0]?.ended).toBe("client_closed");
  });
});

describe("concurrency and aborts at the simulator", () => {
  it("max_concurrency: 2 never has more than two requests open at the simulator", async () => {
    const s = await sim();
    const slow: SimStep = {
      type: "reply",
      text: "slow reply for the limit",
      chunk_delay_ms: 15,
      chunk_size: 4,
    };
    s.script(Array.from({ length: 8 }, () => slow));
    const rt = await runtime(
      {
        model: { provider: "main", name: "echo" },
        providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-c"], max_concurrency: 2 } },
      },
      fakeDeps(),
    );
    await Promise.all(Array.from({ length: 8 }, () => rt.router.turn().complete(hello)));
    const records = s.requests();
    expect(records).toHaveLength(8);
    // The most exchanges open at any instant, from their arrival and close times.
    const edges = records.flatMap((r) => [
      { at: r.received_at, d: 1 },
      { at: r.ended_at ?? Number.POSITIVE_INFINITY, d: -1 },
    ]);
    edges.sort((a, b) => a.at - b.at || a.d - b.d);
    let openNow = 0;
    let most = 0;
    for (const edge of edges) {
      openNow += edge.d;
      most = Math.max(most, openNow);
    }
    expect(most).toBe(2);
  });

  it("an abort mid-stream closes the connection at the simulator and nothing is sent after it", async () => {
    const s = await sim();
    // The first chunk names the role; the second carries text, then the stream goes silent.
    s.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const rt = await runtime({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-x", "sk-y"] } },
    });
    const controller = new AbortController();
    const rec = recorder();
    const call = rt.router.turn().complete(hello, {
      signal: controller.signal,
      onEvent: (e) => {
        rec.onEvent(e);
        if (e.type === "text") controller.abort();
      },
    });
    const error = await rejected(call);
    expect(error.classified.reason).toBe("aborted");
    await s.idle();
    await new Promise((r) => setTimeout(r, 200));
    expect(s.requests()).toHaveLength(1);
    expect(s.requests()[0]?.ended).toBe("client_closed");
    // No rotation, no retry, no fallback after an abort: the key is not blamed.
    expect(rec.types()).toEqual([]);
    const state = await rt.router.runtime("main").pool.state(Date.now());
    expect(state.map((k) => k.status)).toEqual(["ok", "ok"]);
  });

  it("an abort while waiting to retry sends nothing more", async () => {
    const s = await sim();
    s.script([err(500, {}, { error: { message: "internal error", type: "server_error" } })]);
    const rt = await runtime(
      {
        model: { provider: "main", name: "echo" },
        providers: { main: { type: "simulator", base_url: s.url, api_keys: ["sk-z"] } },
      },
      {
        ...fakeDeps(),
        sleep: (ms, signal) =>
          new Promise((resolve, reject) => {
            const t = setTimeout(resolve, ms);
            signal?.addEventListener(
              "abort",
              () => {
                clearTimeout(t);
                reject(signal.reason);
              },
              { once: true },
            );
          }),
      } as FakeDeps,
    );
    const controller = new AbortController();
    const call = rt.router.turn().complete(hello, {
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "retry") controller.abort();
      },
    });
    expect((await rejected(call)).classified.reason).toBe("aborted");
    await new Promise((r) => setTimeout(r, 150));
    expect(s.requests()).toHaveLength(1);
  });

  it("a dropped stream is retried from the start, and the listener is told to drop the partial reply", async () => {
    const s = await sim();
    s.script([{ type: "drop", after_chunks: 2 }]);
    const rt = await runtime({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: s.url } },
    });
    const rec = recorder();
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.text).toContain("hello there");
    expect(s.requests()).toHaveLength(2);
    expect(rec.types()).toEqual(["retry", "stream_restart"]);
    // The listener is told exactly how much to drop: what the cut attempt said ("echo: he").
    expect(rec.status()[1]).toMatchObject({ discard_chars: 8, attempt: 2, max_attempts: 4 });
    const restartAt = rec.events.findIndex((e) => e.type === "stream_restart");
    const after = rec.events
      .slice(restartAt)
      .filter((e) => e.type === "text")
      .map((e) => (e as { delta: string }).delta);
    expect(after.join("")).toBe(done.text);
  });
});

describe("a stream that broke after part of its reply was told, for a listener that cannot take it back", () => {
  /** main drops every attempt after "echo: hello", and the call falls back to backup. */
  async function falling(backup: SimStep[]) {
    const main = await sim();
    const other = await sim();
    main.script([
      { type: "drop", after_chunks: 3 },
      { type: "drop", after_chunks: 3 },
    ]);
    other.script(backup);
    const rt = await runtime({
      model: { provider: "main", name: "echo" },
      providers: {
        main: { type: "simulator", base_url: main.url },
        backup: { type: "simulator", base_url: other.url },
      },
      fallback: [{ provider: "backup", name: "echo" }],
      retry: { max_attempts: 2 },
    });
    const rec = recorder();
    const text = () => rec.events.map((e) => (e.type === "text" ? e.delta : "")).join("");
    return { rt, rec, text, main, other };
  }

  it("another model that says the same goes on from what was told; nothing is dropped or told twice", async () => {
    const { rt, rec, text, other } = await falling([]);
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent, appendOnly: true });
    expect(done).toMatchObject({ provider: "backup", text: "echo: hello there" });
    expect(text()).toBe("echo: hello there");
    expect(other.requests()).toHaveLength(1);
    expect(rec.types()).toEqual(["retry", "stream_restart", "retry_exhausted", "fallback"]);
    expect(rec.status()[1]).toMatchObject({ type: "stream_restart", discard_chars: 0 });
    expect(rec.status()[3]).toMatchObject({ type: "fallback", discard_chars: 0 });
  });

  it("another model that says something else fails the call with reply_diverged, and tells nothing of it", async () => {
    const { rt, rec, text } = await falling([{ type: "reply", text: "a different answer" }]);
    const error = await rejected(
      rt.router.turn().complete(hello, { onEvent: rec.onEvent, appendOnly: true }),
    );
    expect(error.classified).toMatchObject({ reason: "reply_diverged", retryable: false, fallback: false });
    expect(error.classified.message).toMatch(
      /said something else: its text differs from character 0 of the 16 sent/,
    );
    expect(text()).toBe("echo: hello ther");
  });

  it("a listener that can take text back is told to drop it when another model takes over", async () => {
    const { rt, rec, text } = await falling([{ type: "reply", text: "a different answer" }]);
    const done = await rt.router.turn().complete(hello, { onEvent: rec.onEvent });
    expect(done.text).toBe("a different answer");
    const fallback = rec.status().find((e) => e.type === "fallback");
    expect(fallback).toMatchObject({ discard_chars: 16 });
    // What the listener has once it dropped what each event said.
    let kept = "";
    for (const e of rec.events) {
      if (e.type === "text") kept += e.delta;
      if (e.type === "stream_restart" || e.type === "fallback")
        kept = kept.slice(0, kept.length - e.discard_chars);
    }
    expect(kept).toBe("a different answer");
    expect(text()).toContain("echo: hello ther");
  });
});
