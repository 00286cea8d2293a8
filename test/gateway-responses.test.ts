// The Responses API as clients meet it: the official `openai` client, the Vercel AI SDK's default
// provider and LangChain's useResponsesApi, over a real socket, against the Responses routes in
// front of the gateway's chat route, a real agent and a simulator. Each checks what it got back
// and what the simulator was sent.
import { createOpenAI } from "@ai-sdk/openai";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, streamText } from "ai";
import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { until } from "./helpers/gateway.js";
import { type GatewayApp, startGatewayApp } from "./helpers/gateway-app.js";

type Sent = { messages?: { role: string; content: unknown }[] };
const sent = (app: GatewayApp, i: number) =>
  (app.sim.requests()[i]?.body as Sent | undefined)?.messages ?? [];
const sentText = (app: GatewayApp, i: number) => JSON.stringify(sent(app, i));

const client = (app: GatewayApp) => new OpenAI({ baseURL: `${app.url}/v1`, apiKey: app.key, maxRetries: 0 });

const raw = (app: GatewayApp, path: string, init: RequestInit = {}) =>
  fetch(`${app.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${app.key}`, "content-type": "application/json", ...init.headers },
  });

describe("POST /v1/responses with model tenax, through the openai client", () => {
  it("answers a string input, and an item input with instructions", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    const { data, response } = await openai.responses
      .create({ model: "tenax", input: "the word is pineapple" })
      .withResponse();
    expect(data).toMatchObject({ object: "response", status: "completed", model: "tenax", error: null });
    expect(data.id).toMatch(/^resp_/);
    expect(data.output_text).toBe("echo: the word is pineapple");
    expect(data.output).toHaveLength(1);
    expect(data.output[0]).toMatchObject({ type: "message", role: "assistant", status: "completed" });
    expect(data.usage?.total_tokens).toBe((data.usage?.input_tokens ?? 0) + (data.usage?.output_tokens ?? 0));
    expect(data.usage?.output_tokens).toBeGreaterThan(0);
    expect(response.headers.get("x-session-id")).toMatch(/^s_/);
    expect(sentText(app, 0)).toContain("the word is pineapple");

    const items = await openai.responses.create({
      model: "tenax",
      instructions: "answer briefly",
      input: [
        { role: "user", content: [{ type: "input_text", text: "remember kiwi" }] },
        {
          type: "message",
          id: "msg_1",
          status: "completed",
          role: "assistant",
          content: [{ type: "output_text", text: "noted", annotations: [] }],
        },
        { role: "user", content: "and now?" },
      ],
    });
    expect(items.output_text).toBe("echo: and now?");
    expect(items.instructions).toBe("answer briefly");
    // The earlier items are the new session's history.
    expect(sent(app, 1).map((m) => m.role)).toEqual(expect.arrayContaining(["user", "assistant"]));
    expect(sentText(app, 1)).toContain("remember kiwi");
    expect(sentText(app, 1)).toContain("noted");
  });

  it("streams the standard events in order, numbered, with the text the reply had", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    app.sim.script([{ type: "reply", text: "one two three four five", chunk_size: 4 }]);
    const stream = await openai.responses.create({ model: "tenax", input: "count", stream: true });
    const events: { type: string; sequence_number: number }[] = [];
    let text = "";
    for await (const event of stream) {
      events.push(event);
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    expect(text).toBe("one two three four five");
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const types = events.map((e) => e.type).filter((t, i, all) => t !== all[i - 1]);
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.filter((e) => e.type === "response.output_text.delta").length).toBeGreaterThan(2);
    const last = events.at(-1) as unknown as { response: OpenAI.Responses.Response };
    expect(last.response.status).toBe("completed");
    expect(last.response.output_text).toBe("one two three four five");
    expect(last.response.usage?.output_tokens).toBeGreaterThan(0);

    // The SDK's own stream helper builds the same final response from those events.
    const helper = openai.responses.stream({ model: "tenax", input: "again" });
    const final = await helper.finalResponse();
    expect(final.output_text).toBe("echo: again");
    // And it is stored as it was answered.
    expect((await openai.responses.retrieve(final.id)).output_text).toBe("echo: again");
  });

  it("continues a chain with previous_response_id in the same session, and forks a new one", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    const first = await openai.responses
      .create({ model: "tenax", input: "the word is pineapple" })
      .withResponse();
    const sessionId = first.response.headers.get("x-session-id");
    const second = await openai.responses
      .create({ model: "tenax", input: "what was the word?", previous_response_id: first.data.id })
      .withResponse();
    expect(second.data.previous_response_id).toBe(first.data.id);
    expect(second.response.headers.get("x-session-id")).toBe(sessionId);
    // The second turn saw the first: the session holds it.
    expect(sentText(app, 1)).toContain("the word is pineapple");
    expect(sentText(app, 1)).toContain("echo: the word is pineapple");
    const users = (await app.store.getMessages(sessionId ?? "")).filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual(["the word is pineapple", "what was the word?"]);

    // Streamed, the chain goes on the same way.
    const third = openai.responses.stream({
      model: "tenax",
      input: "third",
      previous_response_id: second.data.id,
    });
    expect((await third.finalResponse()).output_text).toBe("echo: third");
    expect(sentText(app, 2)).toContain("what was the word?");

    // A second answer to the first response forks: a new session with the first exchange replayed.
    const fork = await openai.responses
      .create({ model: "tenax", input: "a fork", previous_response_id: first.data.id })
      .withResponse();
    expect(fork.response.headers.get("x-session-id")).not.toBe(sessionId);
    expect(sentText(app, 3)).toContain("the word is pineapple");
    expect(sentText(app, 3)).not.toContain("what was the word?");
  });

  it("GET returns a stored response, DELETE deletes it; store: false keeps none", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    const made = await openai.responses.create({ model: "tenax", input: "keep me", metadata: { tag: "a" } });
    const got = await openai.responses.retrieve(made.id);
    expect(got).toMatchObject({
      id: made.id,
      status: "completed",
      output_text: "echo: keep me",
      metadata: { tag: "a" },
    });
    expect(got.output).toEqual(made.output);

    const deleted = await raw(app, `/v1/responses/${made.id}`, { method: "DELETE" });
    expect(await deleted.json()).toEqual({ id: made.id, object: "response", deleted: true });
    await expect(openai.responses.retrieve(made.id)).rejects.toMatchObject({
      status: 404,
      code: "response_not_found",
    });
    await expect(openai.responses.delete(made.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      openai.responses.create({ model: "tenax", input: "more", previous_response_id: made.id }),
    ).rejects.toMatchObject({ status: 404, code: "response_not_found" });

    const unstored = await openai.responses.create({ model: "tenax", input: "forget me", store: false });
    expect((unstored as unknown as { store: boolean }).store).toBe(false);
    await expect(openai.responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });
    expect(app.sim.requests()).toHaveLength(2);
  });

  it("a failing provider is an error to the client, streamed and not, and a failed stored response", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    app.sim.script([
      {
        type: "error",
        status: 401,
        body: { error: { message: "bad key", type: "auth", code: "invalid_api_key" } },
      },
    ]);
    const plain = await openai.responses.create({ model: "tenax", input: "hello" }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(plain).toBeInstanceOf(OpenAI.APIError);
    expect((plain as InstanceType<typeof OpenAI.APIError>).status).toBeGreaterThanOrEqual(400);
    expect((plain as InstanceType<typeof OpenAI.APIError>).code).toBeTruthy();

    app.sim.script([
      {
        type: "error",
        status: 401,
        body: { error: { message: "bad key", type: "auth", code: "invalid_api_key" } },
      },
    ]);
    const stream = await openai.responses.create({ model: "tenax", input: "hello", stream: true });
    const seen: string[] = [];
    let id = "";
    const streamed = await (async () => {
      for await (const event of stream) {
        seen.push(event.type);
        if (event.type === "response.created") id = event.response.id;
      }
    })().then(
      () => null,
      (e: unknown) => e,
    );
    expect(streamed).toBeInstanceOf(OpenAI.APIError);
    expect((streamed as InstanceType<typeof OpenAI.APIError>).code).toBe(
      (plain as InstanceType<typeof OpenAI.APIError>).code,
    );
    expect(seen).toContain("response.created");
    expect(seen).not.toContain("response.completed");
    const stored = await openai.responses.retrieve(id);
    expect(stored.status).toBe("failed");
    expect(stored.error?.code).toBe((plain as InstanceType<typeof OpenAI.APIError>).code);
  });

  it("refuses by name what it cannot honour", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    await expect(
      openai.responses.create({ model: "tenax", input: "x", tools: [{ type: "web_search" }] }),
    ).rejects.toMatchObject({
      status: 400,
      code: "unsupported_field",
      message: expect.stringMatching(/web_search/),
    });
    await expect(
      openai.responses.create({ model: "tenax", input: "x", background: true }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/background/),
    });
    const unknown = await raw(app, "/v1/responses", {
      method: "POST",
      body: JSON.stringify({ model: "tenax", input: "x", frobnicate: 1 }),
    });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/frobnicate/);
    const text = await raw(app, "/v1/responses", {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "{}",
    });
    expect(text.status).toBe(415);
    expect(app.sim.requests()).toHaveLength(0);
  });

  it("a client that hangs up mid-stream stops the turn, which ends interrupted and kept", async () => {
    const app = await startGatewayApp();
    app.sim.script([{ type: "reply", text: "slow ".repeat(200), chunk_size: 5, chunk_delay_ms: 20 }]);
    const controller = new AbortController();
    const res = await raw(app, "/v1/responses", {
      method: "POST",
      body: JSON.stringify({ model: "tenax", input: "go slowly", stream: true }),
      signal: controller.signal,
    });
    const sessionId = res.headers.get("x-session-id") ?? "";
    const reader = res.body?.getReader();
    let got = "";
    while (!got.includes("response.output_text.delta"))
      got += new TextDecoder().decode((await reader?.read())?.value);
    const id = /"id":"(resp_[^"]+)"/.exec(got)?.[1] ?? "";
    controller.abort();
    await until(async () => (await app.store.getTurns(sessionId))[0]?.status === "interrupted");
    await until(() => app.sim.requests()[0]?.ended === "client_closed");
    // Kept as failed, saying why.
    await until(async () => (await app.store.getResponse(id)) !== null);
    expect(await app.store.getResponse(id)).toMatchObject({
      status: "failed",
      response: { error: { code: "client_closed" } },
    });

    // Not streamed: the hang-up comes before the chat route has answered anything.
    app.sim.script([{ type: "reply", text: "slow ".repeat(200), chunk_size: 5, chunk_delay_ms: 20 }]);
    const waiting = new AbortController();
    const plain = raw(app, "/v1/responses", {
      method: "POST",
      body: JSON.stringify({ model: "tenax", input: "go slowly again" }),
      signal: waiting.signal,
    }).catch((e: unknown) => e);
    await until(() => app.sim.requests().length === 2);
    waiting.abort();
    expect(await plain).toBeInstanceOf(Error);
    await until(() => app.sim.requests()[1]?.ended === "client_closed");
    const session = (await app.store.listSessions()).find((s) => s.id !== sessionId)?.id ?? "";
    await until(async () => (await app.store.getTurns(session))[0]?.status === "interrupted");
  });
});

describe("POST /v1/responses with a PROVIDER/NAME model", () => {
  it("previous_response_id replays the stored chain as the messages, oldest first", async () => {
    const app = await startGatewayApp();
    const openai = client(app);
    const first = await openai.responses.create({ model: "sim/echo", input: "the colour is teal" });
    const second = await openai.responses.create({
      model: "sim/echo",
      input: "and the shape?",
      previous_response_id: first.id,
    });
    const third = await openai.responses.create({
      model: "sim/echo",
      input: "what were they?",
      previous_response_id: second.id,
      // Instructions hold for one response only: the chain does not carry them.
      instructions: "list them",
    });
    expect(third.output_text).toBe("echo: what were they?");
    const replayed = sent(app, 2)
      .filter((m) => m.role === "user" || m.role === "assistant")
      .map((m) => `${m.role}: ${String(m.content)}`);
    expect(replayed).toEqual([
      "user: the colour is teal",
      "assistant: echo: the colour is teal",
      "user: and the shape?",
      "assistant: echo: and the shape?",
      "user: what were they?",
    ]);
    // A broken chain is named, not silently cut short.
    await raw(app, `/v1/responses/${second.id}`, { method: "DELETE" });
    await expect(
      openai.responses.create({ model: "sim/echo", input: "more", previous_response_id: third.id }),
    ).rejects.toMatchObject({ status: 404, message: expect.stringContaining(second.id) });
  });
});

describe("POST /v1/responses through the Vercel AI SDK and LangChain", () => {
  it("the AI SDK's default openai(...) provider: generateText and streamText", async () => {
    const app = await startGatewayApp();
    const openai = createOpenAI({ baseURL: `${app.url}/v1`, apiKey: app.key });
    const made = await generateText({ model: openai("tenax"), prompt: "hello sdk", maxRetries: 0 });
    expect(made.text).toBe("echo: hello sdk");
    expect(made.finishReason).toBe("stop");
    expect(made.usage.outputTokens).toBeGreaterThan(0);
    const streamed = streamText({ model: openai("tenax"), prompt: "stream sdk", maxRetries: 0 });
    let text = "";
    for await (const part of streamed.textStream) text += part;
    expect(text).toBe("echo: stream sdk");
    expect(await streamed.finishReason).toBe("stop");
    expect(app.sim.requests()).toHaveLength(2);
  });

  it("LangChain with useResponsesApi: invoke and stream", async () => {
    const app = await startGatewayApp();
    const model = new ChatOpenAI({
      model: "tenax",
      apiKey: app.key,
      configuration: { baseURL: `${app.url}/v1` },
      maxRetries: 0,
      useResponsesApi: true,
    });
    const reply = await model.invoke("hello chain");
    expect(reply.text).toBe("echo: hello chain");
    let text = "";
    for await (const chunk of await model.stream("stream chain")) text += chunk.text;
    expect(text).toBe("echo: stream chain");
    expect(sentText(app, 1)).toContain("stream chain");
  });
});
