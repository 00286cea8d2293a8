// The webhook chat platform through a real gateway process (the built CLI): an automation tool
// posts messages to POST /api/platforms/webhook/messages with the gateway key, and the answers come
// back to a real callback server on 127.0.0.1 with the configured token and an Idempotency-Key.
// A message posted twice runs once, a callback failing 503 gets its answer once it recovers,
// /status works as a command, and a dangerous command runs only when the button approves it.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { scriptApproveThenDeny } from "./helpers/approval-victims.js";
import { type CallbackServer, startCallbackServer } from "./helpers/callback-server.js";
import { requireBuild } from "./helpers/cli.js";
import { expectError, type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const CALLBACK_TOKEN = "cb-secret-token";

async function setup(exec = "full", roots: string[] = []) {
  const cb = await startCallbackServer();
  const { sim, home } = await simProfile(
    "drain_timeout: 2",
    [
      `tools: { exec: { mode: ${exec} }, files: { roots: ${JSON.stringify(roots)} } }`,
      `platforms:\n  webhook: { callback_url: "${cb.url}", token: "${CALLBACK_TOKEN}" }`,
    ].join("\n"),
  );
  const gw = await startGateway(home);
  return { sim, cb, gw };
}

function post(gw: GatewayProcess, body: unknown, init: RequestInit = {}): Promise<Response> {
  return gw.fetch("/api/platforms/webhook/messages", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });
}

const message = (id: string, text: string, chat = "c1") => ({
  id,
  chat_id: chat,
  user: { id: "u1", name: "Ops" },
  text,
});

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const texts = (cb: CallbackServer) => cb.taken().map((p) => p.body.text);

describe("the webhook platform through a real gateway", () => {
  it("a message posted with the key is taken 202 and answered at the callback with the token and an Idempotency-Key", async () => {
    const { cb, gw } = await setup();
    const res = await post(gw, message("m-1", "hello hook"));
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ object: "platform.message", id: "m-1", accepted: true });
    await until("the answer at the callback", () => cb.taken().length === 1);
    const [answer] = cb.taken();
    expect(answer?.headers["content-type"]).toMatch(/^application\/json/);
    expect(answer?.headers.authorization).toBe(`Bearer ${CALLBACK_TOKEN}`);
    expect(answer?.headers["idempotency-key"]).toMatch(/.+/);
    expect(answer?.body).toMatchObject({ type: "send", chat_id: "c1", text: "echo: hello hook" });
  });

  it("refuses a post without the key 401, a non-JSON body 415, a bad body 400 naming the field; runs nothing", async () => {
    const { sim, cb, gw } = await setup();
    const bare = await fetch(`${gw.url}/api/platforms/webhook/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(message("m-1", "x")),
    });
    expect(bare.status).toBe(401);
    const wrong = await post(gw, message("m-1", "x"), {
      headers: { "content-type": "application/json", authorization: "Bearer not-the-key" },
    });
    expect(wrong.status).toBe(401);
    const notJson = await post(gw, "hello", { headers: { "content-type": "text/plain" } });
    expect(notJson.status).toBe(415);
    const noUser = await post(gw, { id: "m-2", chat_id: "c1", text: "x" });
    expect(noUser.status).toBe(400);
    const refused = (await noUser.json()) as { error: { message: string; param: string | null } };
    expect(refused.error.param).toBe("user");
    expect(refused.error.message).toMatch(/user/);
    const both = await post(gw, { ...message("m-3", "x"), button: { data: "apr:x:y", message_id: "wh_1" } });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: { message: string } }).error.message).toMatch(/either text/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(sim.requests()).toHaveLength(0);
    expect(cb.posts()).toHaveLength(0);
  });

  it("the same message id posted twice runs one turn and is answered once", async () => {
    const { sim, cb, gw } = await setup();
    expect((await post(gw, message("dup-1", "only once"))).status).toBe(202);
    expect((await post(gw, message("dup-1", "only once"))).status).toBe(202);
    await until("the answer", () => cb.taken().length === 1);
    await new Promise((r) => setTimeout(r, 2000));
    expect(sim.requests()).toHaveLength(1);
    expect(texts(cb)).toEqual(["echo: only once"]);
  });

  it("a callback failing 503 twice, then ok: the answer is taken once, each attempt with the same Idempotency-Key", async () => {
    const { cb, gw } = await setup();
    cb.answer([503, 503]);
    expect((await post(gw, message("storm-1", "through the storm"))).status).toBe(202);
    await until("the answer taken", () => cb.taken().length === 1, 30_000);
    await new Promise((r) => setTimeout(r, 2500));
    const posts = cb.posts();
    expect(posts.map((p) => p.status)).toEqual([503, 503, 200]);
    expect(new Set(posts.map((p) => p.headers["idempotency-key"])).size).toBe(1);
    expect(texts(cb)).toEqual(["echo: through the storm"]);
  });

  it("/status is a command: answered at the callback, no model call", async () => {
    const { sim, cb, gw } = await setup();
    expect((await post(gw, message("s-1", "hi"))).status).toBe(202);
    await until("the first answer", () => cb.taken().length === 1);
    expect((await post(gw, message("s-2", "/status"))).status).toBe(202);
    await until("the status answer", () => cb.taken().length === 2);
    const status = cb.taken()[1]?.body.text ?? "";
    expect(status).toMatch(/^Idle\./);
    const sessions = (await (await gw.fetch("/api/sessions")).json()) as { data: { id: string }[] };
    expect(sessions.data).toHaveLength(1);
    expect(status).toContain(`Session: ${sessions.data[0]?.id}.`);
    expect(sim.requests()).toHaveLength(1);
  });

  it("a dangerous command runs when the button approves it, and not when it denies it", async () => {
    const victims = tempDir("tenax-victims-");
    const { sim, cb, gw } = await setup("ask", [victims]);
    const { a, b } = scriptApproveThenDeny(sim, victims);
    const press = async (n: number, pick: 0 | 1) => {
      await until(
        "an approval request with buttons",
        () => cb.taken().filter((p) => p.body.buttons.length > 0).length === n,
      );
      const request = cb.taken().filter((p) => p.body.buttons.length > 0)[n - 1];
      const data = request?.body.buttons.flat()[pick]?.data ?? "";
      expect(data).toMatch(pick === 0 ? /^apr:.+:y$/ : /^apr:.+:n$/);
      const res = await post(gw, {
        id: `press-${n}`,
        chat_id: "c1",
        user: { id: "u1" },
        button: { data, message_id: request?.body.message_id },
      });
      expect(res.status).toBe(202);
    };
    expect((await post(gw, message("a-1", "clean a"))).status).toBe(202);
    await press(1, 0);
    await until("the first answer", () => texts(cb).includes("removed a"));
    expect(existsSync(a)).toBe(false);
    expect((await post(gw, message("a-2", "clean b"))).status).toBe(202);
    await press(2, 1);
    await until("the second answer", () => texts(cb).includes("b stays"));
    expect(existsSync(join(b, "keep.txt"))).toBe(true);
    // Each approval request was edited to say what was decided.
    await until(
      "both decisions posted as edits",
      () => cb.taken().filter((p) => p.body.type === "edit").length === 2,
    );
  });
});

describe("the webhook route without platforms.webhook", () => {
  it("answers 404 naming the config it needs", async () => {
    const { home } = await simProfile();
    const gw = await startGateway(home);
    const res = await post(gw, message("m-1", "x"));
    const error = await expectError(res, 404, "platform_not_configured");
    expect(error.message).toMatch(/platforms\.webhook in config\.yaml/);
  });
});
