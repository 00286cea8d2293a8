// Traces out, as an operator meets them: a real `tenax gateway run` with OTEL_EXPORTER_OTLP_ENDPOINT
// set sends its spans over OTLP/HTTP to a receiver in the test, one trace per turn with the model
// calls, the tool call and the store commits under it, GenAI attributes, and no prompt or reply
// text; nothing goes out without the setting; a collector that hangs or refuses costs a turn nothing.
import { beforeAll, describe, expect, it } from "vitest";
import { tracingOn } from "../src/core/trace.js";
import { startTracing, tracesDestination } from "../src/core/trace-start.js";
import { requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";
import { type ReceivedSpan, startOtlpReceiver } from "./helpers/otlp-receiver.js";

beforeAll(() => requireBuild());

const SECRET_PROMPT = "the launch code is avocado-42";

async function ask(gw: GatewayProcess, model: string, text: string) {
  const started = Date.now();
  const response = await gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: text }] }),
  });
  const body = (await response.json()) as { choices?: { message: { content: string } }[] };
  return {
    status: response.status,
    reply: body.choices?.[0]?.message.content ?? null,
    session: response.headers.get("x-session-id"),
    ms: Date.now() - started,
  };
}

async function stop(gw: GatewayProcess): Promise<string> {
  gw.child.kill("SIGTERM");
  expect(await gw.exited).toBe(0);
  return gw.stdout() + gw.stderr();
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("traces over OTLP/HTTP", () => {
  it("a turn is one trace: the agent span over its model calls (retry included), tool call and commits", async () => {
    const receiver = await startOtlpReceiver();
    const { home, sim } = await simProfile();
    const gw = await startGateway(home, ["--port", "0"], ["gateway", "run"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment.name=test",
    });
    expect(gw.stdout()).toContain(`telemetry: exporting traces to ${receiver.url}/v1/traces`);
    sim.script([
      { type: "error", status: 500 },
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "echo hi" }, id: "call_t1" }] },
      { type: "reply", text: "done: said hi" },
    ]);
    const turn = await ask(gw, "tenax", SECRET_PROMPT);
    expect(turn.status).toBe(200);
    expect(turn.reply).toBe("done: said hi");
    // A model-gateway call is a trace of its own.
    const call = await ask(gw, "sim/echo", "hello there");
    expect(call.status).toBe(200);
    const output = await stop(gw);
    expect(output).toMatch(/telemetry: \d+ span\(s\) exported, 0 dropped/);

    const spans = receiver.spans();
    const [root, ...moreRoots] = byName(spans, "invoke_agent tenax");
    expect(moreRoots).toEqual([]);
    if (root === undefined) throw new Error(`no turn span among ${spans.map((s) => s.name).join(", ")}`);
    expect(root.parentSpanId).toBeNull();
    expect(root.resource["service.name"]).toBe("tenax");
    expect(root.resource["deployment.environment.name"]).toBe("test");
    expect(root.attributes).toMatchObject({
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.conversation.id": turn.session,
      "tenax.turn.status": "completed",
      "gen_ai.response.model": "echo",
    });
    expect(root.attributes["gen_ai.usage.output_tokens"]).toBeGreaterThan(0);
    const ofTurn = spans.filter((s) => s.traceId === root.traceId);
    const children = ofTurn.filter((s) => s.parentSpanId === root.spanId);

    // Two model calls: the first retried once after the 500, the second answered.
    const chats = byName(children, "chat echo");
    expect(chats).toHaveLength(2);
    const [first, second] = chats;
    expect(first?.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "simulator",
      "gen_ai.request.model": "echo",
      "gen_ai.response.model": "echo",
      "gen_ai.response.finish_reasons": ["tool_calls"],
      "tenax.provider": "sim",
      "tenax.attempts": 2,
    });
    expect(first?.events).toEqual([
      expect.objectContaining({
        name: "retry",
        attributes: expect.objectContaining({
          "tenax.attempt": 1,
          "tenax.reason": "server_error",
          "http.response.status_code": 500,
        }),
      }),
    ]);
    expect(second?.attributes).toMatchObject({
      "tenax.attempts": 1,
      "gen_ai.response.finish_reasons": ["stop"],
    });
    expect(second?.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);

    const [tool] = byName(children, "execute_tool terminal");
    expect(tool?.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "terminal",
      "gen_ai.tool.call.id": "call_t1",
    });
    expect(tool?.status).not.toBe(2);
    // The question, the tool's result, the end: each commit in the turn's trace.
    expect(byName(ofTurn, "tenax.store.commit").length).toBeGreaterThanOrEqual(3);
    // Every span of the trace hangs off the turn's (no orphan, no second root).
    const ids = new Set(ofTurn.map((s) => s.spanId));
    for (const span of ofTurn) if (span !== root) expect(ids.has(span.parentSpanId ?? "")).toBe(true);

    const [model] = byName(spans, "tenax.model_call");
    expect(model?.parentSpanId).toBeNull();
    expect(model?.traceId).not.toBe(root.traceId);
    const modelChats = spans.filter((s) => s.parentSpanId === model?.spanId && s.name === "chat echo");
    expect(modelChats).toHaveLength(1);

    // Ids, names and counts only: no prompt, no reply, no tool output.
    const sent = receiver.raw().join("\n");
    expect(sent).not.toContain("avocado");
    expect(sent).not.toContain("said hi");
    expect(sent).not.toContain("hello there");
  });

  it("nothing is exported without the setting, nor with telemetry.enabled: false", async () => {
    expect(tracesDestination(undefined, {})).toBeNull();
    expect(
      tracesDestination({ endpoint: "http://127.0.0.1:4318" }, { OTEL_SDK_DISABLED: "true" }),
    ).toBeNull();
    expect(
      tracesDestination(undefined, {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/",
        OTEL_TRACES_EXPORTER: "none",
      }),
    ).toBeNull();
    expect(tracesDestination(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318/" })).toBe(
      "http://c:4318/v1/traces",
    );
    expect(
      tracesDestination(undefined, {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/custom",
      }),
    ).toBe("http://t:4318/custom");
    expect(await startTracing(undefined, { version: "test", report: () => {}, env: {} })).toBeNull();
    expect(tracingOn()).toBe(false);

    const receiver = await startOtlpReceiver();
    const disabled = await simProfile("", "tools: { exec: { mode: full } }\ntelemetry: { enabled: false }");
    const gw = await startGateway(disabled.home, ["--port", "0"], ["gateway", "run"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    });
    expect((await ask(gw, "tenax", "hello")).status).toBe(200);
    expect(await stop(gw)).not.toContain("telemetry");
    expect(receiver.requests()).toBe(0);
  });

  it("a collector that hangs does not slow the turn; its spans are dropped and counted at the bounded stop", async () => {
    // The same turn on a gateway without the setting, which exports nothing.
    const { home: plainHome } = await simProfile();
    const plain = await startGateway(plainHome, ["--port", "0"], ["gateway", "run"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
    });
    await ask(plain, "tenax", "warm up");
    const base = await ask(plain, "tenax", "hello");
    expect(await stop(plain)).not.toContain("telemetry");

    const hanging = await startOtlpReceiver("hang");
    const exportTimeoutMs = 5000;
    const { home } = await simProfile();
    const gw = await startGateway(home, ["--port", "0"], ["gateway", "run"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: hanging.url,
      OTEL_EXPORTER_OTLP_TIMEOUT: String(exportTimeoutMs),
      // Exported as soon as they end, so the turn runs while an export hangs.
      OTEL_BSP_SCHEDULE_DELAY: "1",
    });
    await ask(gw, "tenax", "warm up");
    const turn = await ask(gw, "tenax", "hello");
    expect(turn.status).toBe(200);
    // An export was under way (and hanging) while the turn ran.
    expect(hanging.requests()).toBeGreaterThan(0);
    // Had the turn waited for it, it would have taken the export's whole timeout.
    expect(turn.ms).toBeLessThan(Math.min(exportTimeoutMs * 0.7, base.ms * 5 + 1500));
    const stoppedAt = Date.now();
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    const output = gw.stdout() + gw.stderr();
    expect(output).toMatch(
      /telemetry: 0 span\(s\) exported, [1-9]\d* dropped \(the collector took no more within 3 s/,
    );
    // The stop waits 3 s at most for the collector; the last export's own timeout bounds the exit.
    expect(Date.now() - stoppedAt).toBeLessThan(exportTimeoutMs + 3000);
  });

  it("a collector that refuses connections: the turn completes, the loss is said once and counted", async () => {
    const refused = await startOtlpReceiver();
    const url = refused.url;
    await refused.close();
    const { home } = await simProfile();
    const gw = await startGateway(home, ["--port", "0"], ["gateway", "run"], {
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_TIMEOUT: "500",
      OTEL_BSP_SCHEDULE_DELAY: "1",
    });
    const turn = await ask(gw, "tenax", "hello");
    expect(turn.status).toBe(200);
    expect(turn.reply).toBe("echo: hello");
    const output = await stop(gw);
    expect(output.match(/telemetry: could not export traces to/g)).toHaveLength(1);
    expect(output).toMatch(/telemetry: 0 span\(s\) exported, [1-9]\d* dropped/);
  });
});
