// `model: "tenax"` honours what an ordinary OpenAI client asks of the reply: its system messages
// (after Tenax's own prompt, or in its place with gateway.client_system: replace), max_tokens and
// max_completion_tokens, stop, temperature, top_p, seed and user, on every model call of the turn.
// And a model call (`PROVIDER/NAME`) is one of the gateway's running things: it counts for
// gateway.max_turns, the drain waits for it and interrupts what is left. Checked over a real
// socket with the openai client, against what the simulator was sent.
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { until } from "./helpers/gateway.js";
import { type GatewayApp, startGatewayApp } from "./helpers/gateway-app.js";

type SentMessage = { role: string; content: unknown };
type SentBody = Record<string, unknown> & { messages: SentMessage[] };
const sent = (app: GatewayApp, i: number) => app.sim.requests()[i]?.body as SentBody;
const systemOf = (body: SentBody) => body.messages.filter((m) => m.role === "system").map((m) => m.content);

const client = (app: GatewayApp) => new OpenAI({ baseURL: `${app.url}/v1`, apiKey: app.key, maxRetries: 0 });

const PROMPT = "You are the Tenax test agent.";

describe("model tenax honours the client's request", () => {
  it("sends the client's system and developer messages after Tenax's prompt, for this turn only", async () => {
    const app = await startGatewayApp({ agent: { system_prompt: PROMPT } });
    const openai = client(app);
    const { data, response } = await openai.chat.completions
      .create({
        model: "tenax",
        messages: [
          { role: "system", content: "Answer in one word." },
          { role: "developer", content: "Never mention pineapples." },
          { role: "user", content: "hello" },
        ],
      })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe("echo: hello");
    // One system message, first: Tenax's own prompt, then the client's, in their order.
    expect(systemOf(sent(app, 0))).toEqual([`${PROMPT}\n\nAnswer in one word.\n\nNever mention pineapples.`]);
    expect(sent(app, 0).messages[0]?.role).toBe("system");

    // Not history: the session's next turn, sent without them, has Tenax's prompt alone.
    const sessionId = response.headers.get("x-session-id") ?? "";
    await openai.chat.completions.create(
      { model: "tenax", messages: [{ role: "user", content: "again" }] },
      { headers: { "x-session-id": sessionId } },
    );
    expect(systemOf(sent(app, 1))).toEqual([PROMPT]);
    expect(JSON.stringify(await app.store.getMessages(sessionId))).not.toContain("Answer in one word.");
  });

  it("with gateway.client_system: replace, the client's system text is sent instead of Tenax's", async () => {
    const app = await startGatewayApp({
      agent: { system_prompt: PROMPT },
      gateway: { client_system: "replace" },
    });
    await client(app).chat.completions.create({
      model: "tenax",
      messages: [
        { role: "system", content: "You are a pirate." },
        { role: "user", content: "ahoy" },
      ],
    });
    expect(systemOf(sent(app, 0))).toEqual(["You are a pirate."]);
    // Without system messages the agent keeps its own prompt.
    await client(app).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(systemOf(sent(app, 1))).toEqual([PROMPT]);
  });

  it("sends max_tokens, stop, temperature, top_p, seed and user with every model call of the turn", async () => {
    const app = await startGatewayApp();
    // The turn's first call asks for a tool, so the turn makes two calls.
    app.sim.script([
      { type: "tool_calls", calls: [{ name: "todo", arguments: { action: "list" } }] },
      { type: "reply", text: "done" },
    ]);
    const answer = await client(app).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "list my todos" }],
      max_tokens: 40,
      stop: ["END", "STOP"],
      temperature: 0.3,
      top_p: 0.5,
      seed: 7,
      user: "user-42",
    });
    expect(answer.choices[0]?.message.content).toBe("done");
    expect(app.sim.requests()).toHaveLength(2);
    for (const i of [0, 1]) {
      const body = sent(app, i);
      expect(body.max_tokens ?? body.max_completion_tokens).toBe(40);
      expect(body).toMatchObject({
        stop: ["END", "STOP"],
        temperature: 0.3,
        top_p: 0.5,
        seed: 7,
        user: "user-42",
      });
    }
    // max_completion_tokens wins over max_tokens, and a lone stop string is a list of one.
    await client(app).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "hi" }],
      max_tokens: 40,
      max_completion_tokens: 12,
      stop: "END",
    });
    const last = sent(app, 2);
    expect(last.max_tokens ?? last.max_completion_tokens).toBe(12);
    expect(last.stop).toEqual(["END"]);
  });

  it("a reply cut by the client's max_tokens ends the turn there (finish_reason length), never continued", async () => {
    const app = await startGatewayApp();
    app.sim.script([{ type: "reply", text: "one two", finish_reason: "length" }]);
    const capped = await client(app).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "count" }],
      max_tokens: 2,
    });
    expect(capped.choices[0]?.finish_reason).toBe("length");
    expect(capped.choices[0]?.message.content).toBe("one two");
    expect(app.sim.requests()).toHaveLength(1);

    // Without a client cap, a reply the profile's limit cut is continued (agent.max_continuations).
    app.sim.script([
      { type: "reply", text: "one two", finish_reason: "length" },
      { type: "reply", text: " three" },
    ]);
    const continued = await client(app).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "count" }],
    });
    expect(continued.choices[0]?.message.content).toBe("one two three");
    expect(app.sim.requests()).toHaveLength(3);
  });

  it("refuses a value it cannot send with a 400 naming the field", async () => {
    const app = await startGatewayApp();
    const bad = async (body: Record<string, unknown>) => {
      const response = await fetch(`${app.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${app.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "x" }], ...body }),
      });
      expect(response.status).toBe(400);
      return ((await response.json()) as { error: { message: string; param: string | null } }).error;
    };
    expect((await bad({ temperature: 7 })).message).toMatch(/^temperature: must be a number from 0 to 2/);
    expect((await bad({ max_tokens: 0 })).message).toMatch(/^max_tokens: must be a whole number of tokens/);
    expect((await bad({ stop: ["a", "b", "c", "d", "e"] })).message).toMatch(
      /^stop: must be a string or a list of at most 4 strings/,
    );
    expect((await bad({ seed: 1.5 })).message).toMatch(/^seed: must be a whole number/);
    expect(app.sim.requests()).toHaveLength(0);
  });
});

describe("a model call is one of the gateway's running things", () => {
  it("counts for gateway.max_turns, is waited for by the drain, and is interrupted when it runs out", async () => {
    const app = await startGatewayApp({ gateway: { max_turns: 1 } });
    const openai = client(app);
    app.sim.script([{ type: "hang", phase: "before_headers" }]);
    const call = openai.chat.completions
      .create({ model: "sim/echo", messages: [{ role: "user", content: "wait" }] })
      .then(
        () => null,
        (error: unknown) => error,
      );
    await until(() => app.sim.requests().length === 1);
    expect(app.gateway.turnsInFlight).toBe(1);
    // The one place is taken: a turn and another call both get the 429.
    for (const model of ["tenax", "sim/echo"]) {
      const refused = await openai.chat.completions
        .create({ model, messages: [{ role: "user", content: "me too" }] })
        .then(
          () => null,
          (error: unknown) => error,
        );
      expect(refused).toBeInstanceOf(OpenAI.APIError);
      expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
      expect((refused as InstanceType<typeof OpenAI.APIError>).code).toBe("too_many_turns");
    }
    app.gateway.beginShutdown();
    // The drain waits for the call; it runs out, and the call is interrupted.
    expect(await app.gateway.drain(300)).toBe(false);
    expect(await app.gateway.interruptAll()).toBe(1);
    const error = await call;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toMatch(/shutting down/);
    expect(app.gateway.turnsInFlight).toBe(0);
    expect(await app.gateway.drain(300)).toBe(true);
  });
});

describe("what a command run by the agent inherits", () => {
  it("`env` through a chat completion shows no key and no variable the operator did not pass on", async () => {
    const saved = { ...process.env };
    Object.assign(process.env, {
      DATABASE_URL: "postgres://app:hunter2@db/app",
      COPY_OF_THE_PROVIDER_KEY: "sk-test-provider-key-0042",
      PASSED_ON: "yes",
    });
    try {
      const app = await startGatewayApp({
        providers: { sim: { api_keys: ["sk-test-provider-key-0042"] } },
        tools: { exec: { mode: "full", env: ["PASSED_ON", "COPY_OF_THE_PROVIDER_KEY"] } },
      });
      app.sim.script([
        { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "env" } }] },
        { type: "reply", text: "looked" },
      ]);
      await client(app).chat.completions.create({
        model: "tenax",
        messages: [{ role: "user", content: "env?" }],
      });
      const toolResult = JSON.stringify(sent(app, 1).messages.filter((m) => m.role === "tool"));
      expect(toolResult).toContain("PATH=");
      expect(toolResult).toContain("PASSED_ON=yes");
      expect(toolResult).not.toContain("DATABASE_URL");
      expect(toolResult).not.toContain("hunter2");
      expect(toolResult).not.toContain("COPY_OF_THE_PROVIDER_KEY");
      expect(toolResult).not.toContain("sk-test-provider-key-0042");
      expect(toolResult).not.toContain(app.key);
    } finally {
      for (const name of ["DATABASE_URL", "COPY_OF_THE_PROVIDER_KEY", "PASSED_ON"]) delete process.env[name];
      Object.assign(process.env, saved);
    }
  });
});
