// The webhook platform against a real callback server on 127.0.0.1: what it posts (JSON, the
// token, the outbox entry's key as Idempotency-Key), how the receiver's answers are read, and,
// through the real outbox on a real store, a callback that fails twice is sent exactly once.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { tempProfile } from "../../../test/helpers/tmp.js";
import { Outbox } from "../../outbox/outbox.js";
import { openStore } from "../../store/registry.js";
import type { InboundEvent } from "../adapter.js";
import { chatOutbox, platformChannel } from "../outbox-channel.js";
import { listChatEntries as listOutboxEntries } from "../outbox-records.js";
import { WebhookAdapter, webhookInbound } from "./adapter.js";

interface Received {
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A callback URL answering each post with the next status (then 200), recording what came. */
async function callback(statuses: number[] = [], headers: Record<string, string> = {}) {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString();
    });
    req.on("end", () => {
      received.push({ headers: req.headers, body: JSON.parse(text) });
      const status = statuses.shift() ?? 200;
      res.writeHead(status, status === 200 ? {} : headers).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received };
}

const chat = { platform: "webhook", chat_id: "ops", thread_id: null };

describe("webhook platform", () => {
  it("posts a send as JSON with the token, and reads 5xx and 429 as retry, other 4xx as final", async () => {
    const hook = await callback([503, 429, 400], { "retry-after": "7" });
    const adapter = new WebhookAdapter({ callbackUrl: hook.url, token: "cb-secret", now: () => 0 });
    const op = { type: "send" as const, chat, text: "hi", format: "plain" as const, idempotency_key: "k1" };
    const first = await adapter.perform(op);
    expect(first).toMatchObject({ ok: false, error: { retryable: true, retry_after_ms: 7000 } });
    expect(await adapter.perform(op)).toMatchObject({ ok: false, error: { retryable: true } });
    const final = await adapter.perform(op);
    expect(final).toMatchObject({ ok: false, error: { retryable: false } });
    if (!final.ok)
      expect(final.error.message).toBe(`webhook callback ${new URL(hook.url).origin} answered 400`);
    const ok = await adapter.perform(op);
    expect(ok.ok && ok.message_id).toMatch(/^wh_/);
    expect(hook.received[0]?.headers).toMatchObject({
      authorization: "Bearer cb-secret",
      "idempotency-key": "k1",
      "content-type": "application/json",
    });
    expect(hook.received[0]?.body).toMatchObject({ type: "send", chat_id: "ops", text: "hi", buttons: [] });
  });

  it("a closed port is a retryable failure that names only the origin", async () => {
    const adapter = new WebhookAdapter({ callbackUrl: "http://127.0.0.1:9/hook?token=abc" });
    const result = await adapter.perform({ type: "send", chat, text: "hi", format: "plain" });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.retryable).toBe(true);
      expect(result.error.message).toContain("http://127.0.0.1:9");
      expect(result.error.message).not.toContain("token=abc");
    }
  });

  it("through the outbox: a callback failing twice receives the message exactly once", async () => {
    const hook = await callback([502, 502]);
    const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
    let now = Date.parse("2026-12-03T06:00:00Z");
    const engine = new Outbox({ store, now: () => now }).add(
      platformChannel(new WebhookAdapter({ callbackUrl: hook.url }), { random: () => 0.5 }),
    );
    const outbox = chatOutbox(engine);
    const { key } = await outbox.enqueue({
      message: { type: "send", chat, text: "the answer", format: "plain" },
    });
    // enqueue started a pass of its own: each kick waits for the one running.
    for (let i = 0; i < 5; i++) {
      await outbox.kick();
      now += 60_000;
    }
    expect(hook.received.map((r) => r.body.text)).toEqual(["the answer", "the answer", "the answer"]);
    expect(new Set(hook.received.map((r) => r.headers["idempotency-key"]))).toEqual(new Set([key]));
    expect((await listOutboxEntries(store)).map((e) => e.state)).toEqual(["delivered"]);
  });

  it("inbound: a message, a command and a button press become events for the sink; bad bodies are named", async () => {
    const adapter = new WebhookAdapter({ callbackUrl: "http://127.0.0.1:9/" });
    const events: InboundEvent[] = [];
    await adapter.start(async (e) => {
      events.push(e);
    });
    const body = (b: unknown) => webhookInbound.parse(b);
    await adapter.receive(body({ id: "m1", chat_id: 7, user: { id: 42, name: "Ada" }, text: "hello" }));
    await adapter.receive(body({ id: "m2", chat_id: 7, user: { id: 42 }, text: "/status" }));
    await adapter.receive(
      body({ id: "m3", chat_id: 7, user: { id: 42 }, button: { data: "apr:1:y", message_id: "wh_1" } }),
    );
    expect(events.map((e) => e.type)).toEqual(["message", "command", "button"]);
    expect(events[0]).toMatchObject({
      update_id: "m1",
      chat: { chat_id: "7" },
      user: { id: "42", name: "Ada" },
    });
    expect(events[1]).toMatchObject({ command: "status" });
    expect(events[2]).toMatchObject({ data: "apr:1:y", message_id: "wh_1" });
    const both = webhookInbound.safeParse({
      id: "x",
      chat_id: 1,
      user: { id: 1 },
      text: "a",
      button: { data: "d", message_id: "m" },
    });
    expect(both.success).toBe(false);
    expect(JSON.stringify(both.error?.issues)).toContain("either text");
    await adapter.stop();
    await expect(
      adapter.receive(body({ id: "m4", chat_id: 7, user: { id: 42 }, text: "late" })),
    ).rejects.toThrow(/not started/);
  });
});
