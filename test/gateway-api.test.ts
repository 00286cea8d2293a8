// The gateway's HTTP API as clients meet it: the official `openai` client, unchanged, against a
// real `tenax gateway run` process and a simulator; continuity by X-Session-Id; every bad input
// answered in the OpenAI error shape with its status; auth; the global turn limit and the busy
// session's queue (more in test/gateway-session-queue.test.ts).
import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import {
  expectError,
  type GatewayProcess,
  refusedGateway,
  simProfile,
  startGateway,
  until,
} from "./helpers/gateway.js";

beforeAll(() => requireBuild());

/** The official client, with the gateway's key unless another is given. */
const client = (gw: GatewayProcess, headers: Record<string, string> = {}, apiKey = gw.key ?? "unused") =>
  new OpenAI({ baseURL: `${gw.url}/v1`, apiKey, defaultHeaders: headers, maxRetries: 0 });

function sentTo(sim: { requests(): { body: unknown }[] }, index: number): string {
  return JSON.stringify((sim.requests()[index]?.body as { messages?: unknown })?.messages ?? null);
}

const post = (gw: GatewayProcess, body: string, headers: Record<string, string> = {}) =>
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });

describe("tenax gateway run: the API", () => {
  it("answers a non-streamed turn to the openai client, continues it by X-Session-Id, and lists it", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    expect(await (await fetch(`${gw.url}/health/live`)).json()).toEqual({ status: "ok" });
    const caps = (await (await gw.fetch("/api/capabilities")).json()) as { capabilities: string[] };
    expect(caps.capabilities).toEqual(
      expect.arrayContaining(["chat.completions", "chat.completions.stream"]),
    );
    const openai = client(gw);
    const models = await openai.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["tenax", "sim/echo"]);

    const { data, response } = await openai.chat.completions
      .create({ model: "tenax", messages: [{ role: "user", content: "the word is pineapple" }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe("echo: the word is pineapple");
    expect(data.choices[0]?.finish_reason).toBe("stop");
    expect(data.usage?.total_tokens).toBeGreaterThan(0);
    const sessionId = response.headers.get("x-session-id");
    expect(sessionId).toMatch(/^s_/);

    const again = client(gw, { "X-Session-Id": sessionId ?? "" });
    const second = await again.chat.completions
      .create({
        model: "tenax",
        messages: [
          { role: "user", content: "ignored" },
          { role: "user", content: "and now?" },
        ],
      })
      .withResponse();
    expect(second.response.headers.get("x-session-id")).toBe(sessionId);
    expect(second.data.choices[0]?.message.content).toBe("echo: and now?");
    expect(sentTo(sim, 1)).toContain("pineapple");
    expect(sentTo(sim, 1)).not.toContain("ignored");

    const shown = (await (await gw.fetch(`/api/sessions/${sessionId}`)).json()) as {
      messages: { role: string; content: string }[];
    };
    expect(shown.messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "the word is pineapple",
      "and now?",
    ]);
    const listed = (await (await gw.fetch("/api/sessions")).json()) as { data: { id: string }[] };
    expect(listed.data.map((s) => s.id)).toContain(sessionId);
  });

  it("streams a turn to the openai client, ending with a final chunk that says the reply is whole", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const { data: stream, response } = await client(gw)
      .chat.completions.create({
        model: "tenax",
        stream: true,
        messages: [
          { role: "system", content: "be brief" },
          { role: "user", content: "first question" },
          { role: "assistant", content: "first answer" },
          { role: "user", content: "second question" },
        ],
      })
      .withResponse();
    expect(response.headers.get("x-session-id")).toMatch(/^s_/);
    let text = "";
    let last: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      last = chunk;
    }
    expect(text).toBe("echo: second question");
    expect(last).toMatchObject({
      choices: [{ finish_reason: "stop" }],
      tenax: { partial: false, status: "completed" },
    });
    // The whole conversation became the new session's history, as sent; the client's system
    // message is not history but joins Tenax's own prompt, in the one system message sent first.
    expect(sentTo(sim, 0)).toContain("first answer");
    const sent = JSON.parse(sentTo(sim, 0)) as { role: string; content: string }[];
    expect(sent.filter((m) => m.role === "system")).toHaveLength(1);
    expect(sent[0]?.role).toBe("system");
    expect(sent[0]?.content).toMatch(/^You are Tenax[\s\S]*\n\nbe brief$/);
  });

  it("a provider stream that restarts mid-reply does not repeat text; a different retry ends it with an error", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const stream = async (content: string) => {
      const response = await post(
        gw,
        JSON.stringify({ stream: true, messages: [{ role: "user", content }] }),
      );
      const session = response.headers.get("x-session-id") ?? "";
      const blocks = (await response.text())
        .split("\n\n")
        .filter((b) => b.startsWith("data: {") || b.startsWith("event:"));
      let text = "";
      const named: string[] = [];
      let error: { code?: string } | null = null;
      for (const block of blocks) {
        if (block.startsWith("event:")) named.push(block.slice(6, block.indexOf("\n")).trim());
        const data = JSON.parse(block.slice(block.indexOf("data: ") + 6));
        if (data.error) error = data.error;
        else text += data.choices?.[0]?.delta?.content ?? "";
      }
      const shown = (await (await gw.fetch(`/api/sessions/${session}`)).json()) as {
        messages: { role: string; content: string | null }[];
      };
      const answers = shown.messages.filter((m) => m.role === "assistant").map((m) => m.content);
      return { text, named, error, answers };
    };
    // The same reply again after the drop: the client gets it once, with nothing to take back.
    sim.script([{ type: "drop", after_chunks: 2 }]);
    const same = await stream("a question long enough for several chunks of reply text");
    expect(sim.requests().map((r) => r.ended)).toEqual(["dropped", "completed"]);
    expect(same).toEqual({
      text: "echo: a question long enough for several chunks of reply text",
      named: [],
      error: null,
      answers: ["echo: a question long enough for several chunks of reply text"],
    });
    // A different reply after the drop: the client keeps what it was sent and the stream ends with
    // the error; the session holds no answer the client never saw.
    sim.reset();
    sim.script([
      { type: "drop", after_chunks: 2 },
      { type: "reply", text: "something else entirely" },
    ]);
    const other = await stream("another question long enough for several chunks");
    expect(other).toEqual({
      text: "echo: an",
      named: [],
      error: expect.objectContaining({ code: "reply_diverged", type: "provider_error" }),
      answers: [],
    });
  });

  it("answers every bad input in the OpenAI error shape with its status", async () => {
    const { home } = await simProfile();
    const gw = await startGateway(home);
    const user = [{ role: "user", content: "hi" }];
    await expectError(await post(gw, "{not json"), 400, "invalid_json");
    const unknown = await expectError(
      await post(gw, JSON.stringify({ messages: user, colour: 1, size: 2 })),
      400,
      "unknown_field",
    );
    expect(unknown.message).toContain("colour, size");
    const tools = await expectError(
      // A tool the client defines (an empty list asks for nothing, and is accepted).
      await post(
        gw,
        JSON.stringify({ messages: user, tools: [{ type: "function", function: { name: "f" } }] }),
      ),
      400,
      "unsupported_field",
    );
    expect(tools.message).toContain("tools");
    await expectError(await post(gw, JSON.stringify({ messages: [] })), 400, "invalid_field");
    await expectError(
      await post(gw, JSON.stringify({ messages: [{ role: "tool", content: "x" }] })),
      400,
      "invalid_field",
    );
    await expectError(await post(gw, "x".repeat(5 * 1024 * 1024)), 413, "request_too_large");
    const missing = await post(gw, JSON.stringify({ messages: user }), { "x-session-id": "s_nope" });
    expect(missing.headers.get("x-session-id")).toBe("s_nope");
    await expectError(missing, 404, "session_not_found");
    await expectError(await gw.fetch("/api/sessions/s_nope"), 404, "session_not_found");
    const wrong = await gw.fetch("/v1/chat/completions");
    expect(wrong.headers.get("allow")).toBe("POST");
    await expectError(wrong, 405, "method_not_allowed");
    await expectError(await gw.fetch("/v1/nothing"), 404, "unknown_route");
    await expectError(await gw.fetch("/api/sessions/%E0%A4%A"), 400, "invalid_url");
    // The openai client sees the same errors as its typed exceptions.
    const thrown = await client(gw, { "X-Session-Id": "s_gone" })
      .chat.completions.create({ model: "tenax", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(thrown).toBeInstanceOf(OpenAI.NotFoundError);
    // Still serving after all of it.
    expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
  });

  it("with gateway.api_key every route but /health/live needs the bearer key", async () => {
    const { home } = await simProfile('api_key: "s3cret-key"');
    const gw = await startGateway(home);
    expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
    await expectError(await fetch(`${gw.url}/api/capabilities`), 401, "invalid_api_key");
    await expectError(
      await fetch(`${gw.url}/api/sessions`, { headers: { authorization: "Bearer s3cret-kex" } }),
      401,
      "invalid_api_key",
    );
    const ok = await fetch(`${gw.url}/api/capabilities`, { headers: { authorization: "Bearer s3cret-key" } });
    expect(ok.status).toBe(200);
    const wrong = await client(gw, {}, "nope")
      .chat.completions.create({ model: "tenax", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError);
    const reply = await client(gw, {}, "s3cret-key").chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "hi" }],
    });
    expect(reply.choices[0]?.message.content).toBe("echo: hi");
  });

  it("refuses to serve on a non-loopback host without an API key (auth: none)", async () => {
    const { home } = await simProfile("auth: none");
    const run = await refusedGateway(home, ["--host", "0.0.0.0", "--port", "0"]);
    expect(run.status).toBe(2);
    expect(run.output).toMatch(/refusing to serve on 0\.0\.0\.0 with gateway\.auth: none/);
    expect(run.output).not.toContain("listening");
  });

  it("exits 78 on a config error, so its service unit does not restart it in a loop", async () => {
    const { home } = await simProfile("max_turns: 0");
    const run = await refusedGateway(home);
    expect(run.status).toBe(78);
    expect(run.output).toContain("gateway.max_turns");
  });

  it("a client that hangs up interrupts its turn, and the session takes the next one", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    const first = await client(gw)
      .chat.completions.create({ model: "tenax", messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    const sessionId = first.response.headers.get("x-session-id") ?? "";
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const controller = new AbortController();
    const hung = gw
      .fetch("/v1/chat/completions", {
        method: "POST",
        signal: controller.signal,
        headers: { "content-type": "application/json", "x-session-id": sessionId },
        body: JSON.stringify({ messages: [{ role: "user", content: "wait" }] }),
      })
      .catch((e: unknown) => e);
    await until(() => sim.requests().length === 2);
    // The next message is sent while the turn still runs: it waits for the session (no race with
    // the hang-up, whichever way the two land).
    const next = client(gw, { "X-Session-Id": sessionId }).chat.completions.create({
      model: "tenax",
      messages: [{ role: "user", content: "after" }],
    });
    await expect
      .poll(
        async () =>
          ((await (await gw.fetch(`/api/sessions/${sessionId}`)).json()) as { queued: number }).queued,
      )
      .toBe(1);
    controller.abort();
    expect(await hung).toBeInstanceOf(Error);
    // The gateway stops the model call of the abandoned turn and frees the session for the next
    // (once the interrupted turn is saved, a moment after the model call ends).
    await until(() => sim.requests()[1]?.ended !== "open");
    expect(sim.requests()[1]?.ended).toBe("client_closed");
    // The interrupted turn's message was kept: the model sees it before the new one.
    // The unanswered question is noted as such, so the model sees "after" as a question of its own.
    expect((await next).choices[0]?.message.content).toBe("echo: after");
    expect(sentTo(sim, 2)).toContain("wait");
    const turns = ((await (await gw.fetch(`/api/sessions/${sessionId}`)).json()) as { running: boolean })
      .running;
    expect(turns).toBe(false);
  });

  it("a message for a busy session waits for it, and turns beyond gateway.max_turns get 429", async () => {
    const { home, sim } = await simProfile("max_turns: 1, drain_timeout: 0.2");
    const gw = await startGateway(home);
    const first = await client(gw)
      .chat.completions.create({ model: "tenax", messages: [{ role: "user", content: "hi" }] })
      .withResponse();
    const sessionId = first.response.headers.get("x-session-id") ?? "";
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const hung = post(gw, JSON.stringify({ stream: true, messages: [{ role: "user", content: "wait" }] }), {
      "x-session-id": sessionId,
    });
    await until(() => sim.requests().length === 2);
    const waiting = post(gw, JSON.stringify({ messages: [{ role: "user", content: "again" }] }), {
      "x-session-id": sessionId,
    });
    await expect
      .poll(
        async () =>
          ((await (await gw.fetch(`/api/sessions/${sessionId}`)).json()) as { queued: number }).queued,
      )
      .toBe(1);
    const full = await post(gw, JSON.stringify({ messages: [{ role: "user", content: "other" }] }));
    expect(full.headers.get("retry-after")).toBe("1");
    await expectError(full, 429, "too_many_turns");
    gw.child.kill("SIGTERM");
    // The waiting message never started: shutdown answers it 503.
    await expectError(await waiting, 503, "shutting_down");
    expect(sim.requests()).toHaveLength(2);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(await (await hung).text()).toContain('"status":"interrupted"');
  });
});
