// A provider stream that drops after part of its reply reached the client is retried; what the
// client assembles must then be one whole answer or an error, never the cut attempt with the retry
// appended. Against the real gateway app on a real socket, in front of the simulator scripted to
// drop, with the openai client, the Vercel AI SDK and LangChain, on the chat completions and the
// Responses API, in the agent mode (`model: "tenax"`) and the model-gateway mode: each client
// either gets the whole reply once or raises, and the store (the session, and the stored Response)
// holds exactly what the client was told.
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import type { Simulator } from "../src/llm/simulator/server.js";
import type { SimStep } from "../src/llm/simulator/steps.js";
import type { Store } from "../src/store/store.js";
import { startGatewayApp } from "./helpers/gateway-app.js";
import { startModelGateway } from "./helpers/model-gateway.js";
import {
  type AssembledCall,
  isResponses,
  STREAM_CLIENTS,
  type StreamClient,
  type StreamOutcome,
  streamWith,
} from "./helpers/stream-clients.js";

interface Served {
  /** Without `/v1`. */
  url: string;
  key: string;
  sim: Simulator;
  store: Store;
}

const MODES = {
  agent: {
    model: "tenax",
    start: async (): Promise<Served> => startGatewayApp({ retry: { max_attempts: 3 } }),
  },
  model: {
    model: "main/echo",
    start: async (): Promise<Served> => {
      const gw = await startModelGateway();
      return { url: gw.url.replace(/\/v1$/, ""), key: gw.key, sim: gw.main, store: gw.store };
    },
  },
} as const;

const PROMPT = "tell me about the weather in Paris today";
const ECHO = `echo: ${PROMPT}`;

/** The one session the call made, its assistant messages, and its Response as GET shows it. */
async function stored(served: Served, client: StreamClient, outcome: StreamOutcome) {
  const sessions = await served.store.listSessions();
  expect(sessions).toHaveLength(1);
  const id = sessions[0]?.id ?? "";
  const messages = await served.store.getMessages(id);
  const assistant = messages.filter((m) => m.role === "assistant");
  const response = isResponses(client)
    ? await new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 }).responses.retrieve(
        outcome.responseId ?? (await served.store.latestResponseId(id)) ?? "",
      )
    : null;
  return { id, messages, assistant, response, turns: await served.store.getTurns(id) };
}

async function run(served: Served, client: StreamClient, model: string, script: SimStep[], tools = false) {
  served.sim.script(script);
  const outcome = await streamWith(client, {
    url: served.url,
    key: served.key,
    model,
    prompt: PROMPT,
    ...(tools ? { weatherTool: true } : {}),
  });
  await served.sim.idle();
  return outcome;
}

for (const [mode, { model, start }] of Object.entries(MODES))
  describe(`a stream restarted after text reached the client (${mode} mode)`, () => {
    for (const client of STREAM_CLIENTS) {
      it(`${client}: a retry that says something else ends the stream with an error, and the store holds only what the client was told`, async () => {
        const served = await start();
        // The cut attempt said "alpha beta gamma"; the retry says the echo.
        const outcome = await run(served, client, model, [
          { type: "drop", after_chunks: 3, text: "alpha beta gamma delta" },
        ]);
        expect(outcome.text).not.toContain("echo");
        expect(outcome).toMatchObject({ raised: true, code: "reply_diverged", text: "alpha beta gamma" });
        expect(outcome.message).toMatch(/said something else/);
        // One retry, and nothing after it: another attempt cannot make "alpha beta gamma" true.
        expect(served.sim.requests()).toHaveLength(2);
        const kept = await stored(served, client, outcome);
        // No answer the client never saw.
        expect(kept.assistant).toEqual([]);
        if (mode === "agent")
          expect(kept.turns).toEqual([
            expect.objectContaining({ status: "failed", error: expect.stringMatching(/reply_diverged/) }),
          ]);
        if (kept.response !== null) {
          expect(kept.response.status).toBe("failed");
          expect(kept.response.error?.code).toBe("reply_diverged");
          expect(kept.response.output_text).toBe(outcome.text);
        }
      });

      it(`${client}: a retry that says the same again continues it: the whole reply once, stored as told`, async () => {
        const served = await start();
        const outcome = await run(served, client, model, [{ type: "drop", after_chunks: 3 }]);
        expect(outcome).toMatchObject({ raised: false, text: ECHO });
        expect(served.sim.requests().map((r) => r.ended)).toEqual(["dropped", "completed"]);
        const kept = await stored(served, client, outcome);
        expect(kept.assistant.map((m) => m.content)).toEqual([ECHO]);
        if (kept.response !== null) {
          expect(kept.response.status).toBe("completed");
          expect(kept.response.output_text).toBe(ECHO);
        }
      });
    }
  });

describe("a stream of tool calls restarted after part of a call reached the client (model mode)", () => {
  /**
   * The cut attempt calls get_weather for Paris: `after` 3 chunks sends its header and `{"city":`,
   * 4 its whole arguments. The retry calls it for `city`.
   */
  const weather = (city: string, after: number): SimStep[] => [
    { type: "drop", after_chunks: after, calls: [{ name: "get_weather", arguments: { city: "Paris" } }] },
    { type: "tool_calls", calls: [{ name: "get_weather", arguments: { city } }] },
  ];
  /** The calls of the stored answer, as the client would send them back. */
  const storedCalls = (calls: unknown[] | null | undefined): AssembledCall[] =>
    (calls ?? []).map((c) => {
      const call = c as { id: string; function: { name: string; arguments: string } };
      return { id: call.id, name: call.function.name, arguments: call.function.arguments };
    });

  for (const client of ["openai-chat", "openai-responses"] as const) {
    it(`${client}: the retry's same call continues under the id the client has, and the store keeps that id`, async () => {
      const served = await MODES.model.start();
      const outcome = await run(served, client, "main/echo", weather("Paris", 3), true);
      expect(outcome.raised).toBe(false);
      // The cut attempt's id (the simulator numbers ids by request): the retry's would be call_sim2_0.
      const told = [{ id: "call_sim1_0", name: "get_weather", arguments: '{"city":"Paris"}' }];
      expect(outcome.calls).toEqual(told);
      const kept = await stored(served, client, outcome);
      expect(kept.assistant.map((m) => storedCalls(m.tool_calls))).toEqual([told]);
      if (kept.response !== null)
        expect(kept.response.output).toEqual([
          expect.objectContaining({
            type: "function_call",
            call_id: told[0]?.id,
            arguments: told[0]?.arguments,
          }),
        ]);
    });

    it(`${client}: a retry that calls with other arguments ends the stream with an error, and nothing is stored as answered`, async () => {
      const served = await MODES.model.start();
      const outcome = await run(served, client, "main/echo", weather("Berlin", 4), true);
      expect(outcome.raised).toBe(true);
      expect(outcome.message).toMatch(/said something else/);
      expect(outcome.calls).toEqual([
        { id: "call_sim1_0", name: "get_weather", arguments: '{"city":"Paris"}' },
      ]);
      const kept = await stored(served, client, outcome);
      expect(kept.assistant).toEqual([]);
      if (kept.response !== null) expect(kept.response.status).toBe("failed");
    });
  }
});
