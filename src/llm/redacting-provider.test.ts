import { afterEach, describe, expect, it } from "vitest";
import { collectStream, errorOf } from "../../test/helpers/provider-stream.js";
import { Redactor } from "../core/redact.js";
import { MESSAGE_MAX_CHARS } from "./classify.js";
import { createOpenAIProvider } from "./providers/openai.js";
import { redactingProvider } from "./redacting-provider.js";
import { type Simulator, startSimulator } from "./simulator/server.js";

const KEY = "zq8Hk2pLm4Rt7Vw9xY3bN6cD";
const MARKER = "[redacted:providers.main.api_keys[0]]";
const redactor = new Redactor([{ name: "providers.main.api_keys[0]", value: KEY }]);

let sim: Simulator | null = null;
afterEach(async () => {
  await sim?.close();
  sim = null;
});

async function provider() {
  sim = await startSimulator();
  return redactingProvider(createOpenAIProvider({ name: "main", baseURL: sim.url }), redactor);
}

const request = { model: "echo", messages: [{ role: "user" as const, content: "hi" }] };

describe("the model-output boundary", () => {
  it("a reply and a tool call that spell the key over small deltas reach no listener with it", async () => {
    const p = await provider();
    sim?.script([
      {
        type: "tool_calls",
        text: `using ${KEY} now`,
        chunk_size: 3,
        calls: [{ id: "c1", name: "terminal", arguments: { command: `curl -H 'x-key: ${KEY}'` } }],
      },
    ]);
    const events = await collectStream(p, request, { apiKey: KEY });
    expect(JSON.stringify(events)).not.toContain(KEY);
    const text = events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("");
    expect(text).toBe(`using ${MARKER} now`);
    const done = events.at(-1);
    expect(done).toMatchObject({ type: "done", text: `using ${MARKER} now` });
    const call = events.find((e) => e.type === "tool_call");
    expect(JSON.parse(call?.type === "tool_call" ? call.arguments : "{}")).toEqual({
      command: `curl -H 'x-key: ${MARKER}'`,
    });
    // The call's streamed pieces, put together, are the redacted arguments, nothing lost.
    const pieces = events.flatMap((e) => (e.type === "tool_call_delta" ? [e.arguments] : [])).join("");
    expect(pieces).toBe(call?.type === "tool_call" ? call.arguments : "");
    expect(events.filter((e) => e.type === "tool_call_delta").length).toBeGreaterThan(3);
  });

  it("an error that quotes the key, even where the message is cut short in the middle of it", async () => {
    const p = await provider();
    // The key starts 10 characters before the classifier's cut.
    const filler = "x".repeat(MESSAGE_MAX_CHARS - 11);
    sim?.script([
      {
        type: "error",
        status: 400,
        body: { error: { message: `bad key ${KEY}`, type: "invalid_request_error" } },
      },
      { type: "error", status: 400, body: { error: { message: `${filler} ${KEY} and more`, type: "x" } } },
    ]);
    const whole = errorOf(await collectStream(p, request, { apiKey: KEY }));
    expect(whole.message).toBe(`bad key ${MARKER}`);
    const cut = errorOf(await collectStream(p, request, { apiKey: KEY }));
    expect(cut.message.endsWith(`${MARKER}…`)).toBe(true);
    expect(cut.message).not.toContain(KEY.slice(0, 4));
  });
});
