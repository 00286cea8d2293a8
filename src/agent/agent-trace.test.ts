// A compression pass's span, as the compressor makes it inside a turn's: its outcome and sizes,
// with the summarizer's model call and the store's commit of the compaction nested under it; a
// pass that is skipped says why. The real simulator as the summarizer, the real store.
import { afterEach, describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { recordTraces } from "../../test/helpers/trace-recorder.js";
import { configSchema } from "../config/schema.js";
import { startSpan, withSpan } from "../core/trace.js";
import { createModelRuntime } from "../llm/runtime.js";
import { startSimulator } from "../llm/simulator/server.js";
import { openStore, releaseStore } from "../store/registry.js";
import { traceTurn } from "./agent-trace.js";
import { Compressor, newTurnCompressionState } from "./compression.js";
import { Scheduler } from "./scheduler.js";
import type { TurnResult } from "./turn.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const WINDOW = 4_000;
const filler = (label: string) => `${label} ${"lorem ipsum dolor ".repeat(30)}`;

async function rig() {
  const sim = await startSimulator({
    models: { main: { context_window: WINDOW }, summarizer: { context_window: 50_000 } },
  });
  closers.push(() => sim.close());
  const config = configSchema.parse({
    model: { provider: "sim", name: "main" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        models: {
          main: { context_window: WINDOW, max_output_tokens: 500 },
          summarizer: { context_window: 50_000, max_output_tokens: 500 },
        },
      },
    },
    auxiliary: { compression: { provider: "sim", name: "summarizer" } },
    retry: { max_attempts: 1 },
  });
  const rt = await createModelRuntime(config, { deps: fakeDeps(7) });
  closers.push(() => rt.close());
  const deps = fakeDeps();
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0, deps });
  closers.push(() => releaseStore(store));
  const compressor = new Compressor({ router: rt.router, store, deps, settings: config.compression });
  const sessionId = await store.createSession();
  for (let k = 1; k <= 8; k++) {
    await store.appendMessages([
      { session_id: sessionId, role: "user", content: filler(`question ${k}`) },
      { session_id: sessionId, role: "assistant", content: filler(`answer ${k}`) },
    ]);
  }
  const input = async (reason: "threshold" | "manual") => ({
    sessionId,
    turnId: null,
    transcript: await store.getMessages(sessionId),
    compaction: null,
    system: null,
    window: WINDOW,
    lastInputTokens: null,
    reason,
    signal: new AbortController().signal,
  });
  return { sim, compressor, input, sessionId };
}

describe("compression spans", () => {
  it("a pass that compresses: outcome, sizes, the summarizer's call and the commit under it", async () => {
    const r = await rig();
    const traces = recordTraces();
    r.sim.script([{ type: "reply", text: "The user asked eight questions about lorem ipsum." }]);
    const input = await r.input("threshold");
    const turn = startSpan("turn");
    const made = await withSpan(turn, () => r.compressor.compress(input, newTurnCompressionState()));
    expect(made).not.toBeNull();
    const [pass] = traces.named("tenax.compress");
    expect(pass?.parent).toBe(turn);
    expect(pass).toMatchObject({ error: null, ended: true });
    expect(pass?.attributes).toMatchObject({
      "gen_ai.conversation.id": r.sessionId,
      "tenax.compression.reason": "threshold",
      "tenax.compression.outcome": "done",
      "tenax.compression.summarizer": "sim/summarizer",
    });
    expect(pass?.attributes["tenax.compression.tokens_after"]).toBeLessThan(
      Number(pass?.attributes["tenax.compression.tokens_before"]),
    );
    const [summarizer] = traces.named("chat summarizer");
    expect(summarizer?.parent).toBe(pass);
    expect(traces.named("tenax.store.commit").some((c) => c.parent === pass && c.ended)).toBe(true);
    // Nothing of the conversation or the summary.
    expect(JSON.stringify(traces.spans.map((s) => s.attributes))).not.toMatch(/lorem|eight questions/);
  });

  it("a pass whose summary comes back empty is marked failed, with why", async () => {
    const r = await rig();
    const traces = recordTraces();
    r.sim.script([{ type: "reply", text: "   " }]);
    await r.compressor.compress(await r.input("threshold"), newTurnCompressionState());
    const [pass] = traces.named("tenax.compress");
    expect(pass).toMatchObject({ parent: null, error: "empty_summary", ended: true });
    expect(pass?.attributes["tenax.compression.outcome"]).toBe("failed");
  });
});

describe("background work and traces", () => {
  it("a scheduler armed during a turn runs its later jobs outside that turn's trace", async () => {
    const traces = recordTraces();
    const scheduler = new Scheduler();
    const turn = startSpan("turn");
    const inJob: string[] = [];
    const ran = new Promise<void>((resolve) => {
      withSpan(turn, () =>
        scheduler.every("probe", 5, () => {
          // What a job commits is traced only as part of a trace already started.
          startSpan("tenax.store.commit", {}, { childOnly: true }).end();
          inJob.push("ran");
          resolve();
          return false;
        }),
      );
    });
    await ran;
    scheduler.stop();
    turn.end();
    expect(inJob).toEqual(["ran"]);
    expect(traces.named("tenax.store.commit")).toEqual([]);
  });
});

describe("turn spans", () => {
  const result = {
    turn_id: "t_1",
    status: "completed",
    iterations: 1,
    partial: false,
    usage: { input_tokens: 1, output_tokens: 1 },
    model: null,
    finish_reason: "stop",
    failure: null,
  } as unknown as TurnResult;
  it("a turn started while another turn's span is active is a trace of its own; a subagent's nests under its tool", async () => {
    const traces = recordTraces();
    const outer = startSpan("invoke_agent tenax");
    await withSpan(outer, () => traceTurn({ sessionId: "s_2", text: "", cwd: "/" }, async () => result));
    const tool = startSpan("execute_tool delegate_task");
    await withSpan(tool, () => traceTurn({ sessionId: "s_3", text: "", cwd: "/" }, async () => result));
    const [, second, , third] = traces.spans;
    expect(second?.attributes["gen_ai.conversation.id"]).toBe("s_2");
    expect(second?.parent).toBeNull();
    expect(third?.attributes["gen_ai.conversation.id"]).toBe("s_3");
    expect(third?.parent).toBe(tool);
  });
});
