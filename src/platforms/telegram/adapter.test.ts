// The Telegram adapter (grammY's Api) against the local Bot API server on 127.0.0.1: updates in
// order through the sink and confirmed only once it committed them, the polling loop through an
// outage, sends with formatting, buttons, threads and parts, and each failure classified.
import { afterEach, describe, expect, it } from "vitest";
import type { InboundEvent } from "../adapter.js";
import { attempt } from "../outbox-send.js";
import { TelegramAdapter, type TelegramAdapterOptions } from "./adapter.js";
import { startTelegramSim, type TelegramSim } from "./sim/server.js";

const TOKEN = "123456789:AAHtest-token-for-the-adapter-tests";
const open: { sim: TelegramSim; adapter: TelegramAdapter }[] = [];
afterEach(async () => {
  for (const { sim, adapter } of open.splice(0)) {
    await adapter.stop();
    await sim.close();
  }
});

async function setup(options: Partial<TelegramAdapterOptions> = {}) {
  const sim = await startTelegramSim({
    token: TOKEN,
    chats: [{ id: 42 }, { id: -1001, type: "supergroup", is_forum: true }],
  });
  const adapter = new TelegramAdapter({
    token: TOKEN,
    apiRoot: sim.apiRoot,
    mode: "polling",
    pollTimeoutS: 1,
    pollBackoff: { stepsMs: [50, 100], capMs: 200 },
    ...options,
  });
  open.push({ sim, adapter });
  return { sim, adapter };
}

const chat = (id: string, thread: string | null = null) => ({
  platform: "telegram",
  chat_id: id,
  thread_id: thread,
});

async function until(what: string, check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("Telegram adapter: receiving", () => {
  it("messages, commands and a forum topic arrive in order; a group's command to another bot is a message", async () => {
    const { sim, adapter } = await setup();
    const events: InboundEvent[] = [];
    await adapter.start(async (e) => {
      events.push(e);
    });
    sim.injectMessage({ chat: 42, from: { id: 42, username: "ada" }, text: "hello" });
    sim.injectMessage({ chat: 42, from: 42, text: "/status" });
    sim.injectMessage({ chat: -1001, from: 7, text: "/new@other_bot", message_thread_id: 9 });
    sim.injectMessage({ chat: -1001, from: 7, text: "/stop@tenax_test_bot", message_thread_id: 9 });
    await until("four events", () => events.length === 4);
    expect(events.map((e) => e.type)).toEqual(["message", "command", "message", "command"]);
    expect(events[0]).toMatchObject({
      chat: chat("42"),
      chat_type: "private",
      user: { id: "42", name: "@ada" },
      text: "hello",
    });
    expect(events[2]).toMatchObject({ chat: chat("-1001", "9"), chat_type: "group", text: "/new@other_bot" });
    expect(events[3]).toMatchObject({ command: "stop" });
    expect(adapter.status()).toMatchObject({
      connected: true,
      bot_username: "tenax_test_bot",
      updates_total: 4,
    });
  });

  it("an update the sink could not commit is delivered again, and not confirmed before", async () => {
    const { sim, adapter } = await setup();
    const seen: string[] = [];
    let refuse = 2;
    await adapter.start(async (e) => {
      seen.push(e.update_id);
      if (refuse-- > 0) throw new Error("store is down");
    });
    const { update_id } = sim.injectMessage({ chat: 42, from: 42, text: "keep me" });
    await until("the third delivery", () => seen.length >= 3);
    expect(seen.slice(0, 3)).toEqual([String(update_id), String(update_id), String(update_id)]);
    // Once committed, the next poll confirms it: Telegram holds nothing more.
    await until("the confirmation", () => sim.pendingUpdates() === 0);
    expect(adapter.status().last_error).toBeNull();
  });

  it("survives the Bot API refusing connections, then a 502 outage, and says so meanwhile", async () => {
    const { sim, adapter } = await setup();
    const events: InboundEvent[] = [];
    const trouble: (string | null)[] = [];
    const a2 = new TelegramAdapter({
      token: TOKEN,
      apiRoot: sim.apiRoot,
      mode: "polling",
      pollTimeoutS: 1,
      pollBackoff: { stepsMs: [50, 100], capMs: 200 },
      onTrouble: (m) => trouble.push(m),
    });
    await adapter.stop();
    open[0] = { sim, adapter: a2 };
    sim.startOutage({ mode: "error", status: 502 });
    await a2.start(async (e) => {
      events.push(e);
    });
    await until("a failed poll", () => a2.status().last_error !== null);
    expect(a2.status()).toMatchObject({ connected: false });
    expect(a2.status().last_error).toMatch(/polling: .*502/);
    sim.injectMessage({ chat: 42, from: 42, text: "during the outage" });
    await sim.liftOutage();
    await until("the message after the outage", () => events.length === 1);
    expect(events[0]).toMatchObject({ text: "during the outage" });
    expect(a2.status()).toMatchObject({ connected: true, last_error: null });
    expect(trouble.at(-1)).toBeNull();
  });

  it("a poll Telegram never answers times out, is said, and the next one gets the message", async () => {
    const { sim, adapter } = await setup({ callTimeoutS: 2 });
    await adapter.stop();
    sim.fault({ type: "hang", method: "getUpdates" });
    const hung = new TelegramAdapter({
      token: TOKEN,
      apiRoot: sim.apiRoot,
      mode: "polling",
      pollTimeoutS: 1,
      callTimeoutS: 2,
      pollBackoff: { stepsMs: [50], capMs: 50 },
    });
    open[0] = { sim, adapter: hung };
    const events: InboundEvent[] = [];
    await hung.start(async (e) => {
      events.push(e);
    });
    await until("the hung poll to fail", () => hung.status().last_error !== null, 8_000);
    expect(hung.status().last_error).toMatch(/polling: /);
    sim.injectMessage({ chat: 42, from: 42, text: "after the hang" });
    await until("the message", () => events.length === 1, 8_000);
    expect(hung.status().connected).toBe(true);
  });

  it("a button press on the bot's message is a button event", async () => {
    const { sim, adapter } = await setup();
    const events: InboundEvent[] = [];
    await adapter.start(async (e) => {
      events.push(e);
    });
    const sent = await adapter.perform({
      type: "send",
      chat: chat("42"),
      text: "run `rm -rf build`?",
      format: "markdown",
      buttons: [
        [
          { text: "Approve", data: "apr:1:y" },
          { text: "Deny", data: "apr:1:n" },
        ],
      ],
    });
    expect(sent.ok).toBe(true);
    const messageId = sent.ok ? Number(sent.message_id) : 0;
    sim.pressButton({ chat_id: 42, message_id: messageId, data: "apr:1:y", from: 42 });
    await until("the press", () => events.length === 1);
    expect(events[0]).toMatchObject({
      type: "button",
      data: "apr:1:y",
      message_id: String(messageId),
      user: { id: "42" },
    });
    const press = events[0];
    if (press?.type !== "button") throw new Error("expected a button event");
    expect(
      await adapter.perform({ type: "answer", callback_id: press.callback_id, text: "approved" }),
    ).toEqual({
      ok: true,
      message_id: null,
    });
    expect(sim.callbackAnswers()).toMatchObject([{ data: "apr:1:y", text: "approved" }]);
  });
});

describe("Telegram adapter: sending", () => {
  it("markdown goes as HTML; buttons, threads, edits; a message too long is sent in parts", async () => {
    const { sim, adapter } = await setup();
    const first = await adapter.perform({
      type: "send",
      chat: chat("42"),
      text: "**done** in `1 s` <ok>",
      format: "markdown",
    });
    expect(first.ok).toBe(true);
    const [message] = sim.sentMessages(42);
    expect(message).toMatchObject({ text: "done in 1 s <ok>", parse_mode: "HTML" });
    expect(message?.entities.map((e) => e.type)).toEqual(["bold", "code"]);
    const long = `${"a".repeat(4000)}\n\n${"b".repeat(3000)}`;
    const parts = await adapter.perform({
      type: "send",
      chat: chat("-1001", "9"),
      text: long,
      format: "plain",
    });
    const group = sim.sentMessages(-1001);
    expect(group.map((m) => m.text.length)).toEqual([4000, 3000]);
    expect(group.every((m) => m.message_thread_id === 9)).toBe(true);
    expect(parts.ok && parts.message_id).toBe(String(group[1]?.message_id));
    const id = first.ok ? (first.message_id ?? "") : "";
    expect(
      await adapter.perform({
        type: "edit",
        chat: chat("42"),
        message_id: id,
        text: "edited",
        format: "plain",
      }),
    ).toEqual({
      ok: true,
      message_id: id,
    });
    // The same text again: Telegram's "not modified" is a success, not a failure to retry.
    expect(
      (
        await adapter.perform({
          type: "edit",
          chat: chat("42"),
          message_id: id,
          text: "edited",
          format: "plain",
        })
      ).ok,
    ).toBe(true);
    expect(sim.sentMessages(42)[0]?.text).toBe("edited");
    await adapter.perform({ type: "typing", chat: chat("42") });
    expect(sim.chatActions(42).map((a) => a.action)).toEqual(["typing"]);
  });

  it("formatting Telegram refuses is resent as plain text through the outbox, once", async () => {
    const { sim, adapter } = await setup();
    sim.fault({
      type: "error",
      method: "sendMessage",
      status: 400,
      description: 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0',
    });
    const refused = await adapter.perform({
      type: "send",
      chat: chat("42"),
      text: "**bold**",
      format: "markdown",
    });
    expect(refused).toMatchObject({ ok: false, error: { plain_text: true } });
    // The outbox's attempt does the resend within the same attempt, as plain text.
    sim.fault({
      type: "error",
      method: "sendMessage",
      status: 400,
      description: 'Bad Request: can\'t parse entities: Unsupported start tag "x" at byte offset 0',
    });
    const outcome = await attempt(
      adapter,
      { type: "send", chat: chat("42"), text: "**bold** <x>", format: "markdown" },
      null,
      new AbortController().signal,
      "k",
    );
    expect(outcome).toMatchObject({ kind: "delivered", op: { format: "plain" } });
    expect(sim.sentMessages(42).map((m) => [m.text, m.parse_mode ?? null])).toEqual([["**bold** <x>", null]]);
  });

  it("classifies each failure: 429 with retry_after, a 502, a cut connection, a blocked chat, an unknown chat", async () => {
    const { sim, adapter } = await setup();
    const send = () => adapter.perform({ type: "send", chat: chat("42"), text: "x", format: "plain" });
    sim.fault([
      { type: "rate_limit", method: "sendMessage", retry_after: 2 },
      { type: "error", method: "sendMessage", status: 502 },
      { type: "drop", method: "sendMessage" },
      {
        type: "error",
        method: "sendMessage",
        status: 403,
        description: "Forbidden: bot was blocked by the user",
      },
    ]);
    expect(await send()).toMatchObject({ ok: false, error: { retryable: true, retry_after_ms: 2000 } });
    expect(await send()).toMatchObject({ ok: false, error: { retryable: true, retry_after_ms: null } });
    expect(await send()).toMatchObject({ ok: false, error: { retryable: true } });
    expect(await send()).toMatchObject({ ok: false, error: { retryable: false, plain_text: false } });
    const unknown = await adapter.perform({ type: "send", chat: chat("777"), text: "x", format: "plain" });
    expect(unknown).toMatchObject({ ok: false, error: { retryable: false } });
    if (!unknown.ok) expect(unknown.error.message).toContain("chat not found");
    expect((await send()).ok).toBe(true);
  });

  it("a wrong token is a failure that says to check it, and the loop keeps trying without a crash", async () => {
    const { sim } = await setup();
    const bad = new TelegramAdapter({
      token: "987654321:AAHsomething-else-entirely-wrong",
      apiRoot: sim.apiRoot,
      mode: "polling",
      pollTimeoutS: 1,
      pollBackoff: { stepsMs: [50], capMs: 50 },
    });
    await bad.start(async () => {});
    await until("a failed getMe", () => bad.status().last_error !== null);
    expect(bad.status().last_error).toMatch(/401.*bot token/);
    const result = await bad.perform({ type: "send", chat: chat("42"), text: "x", format: "plain" });
    expect(result).toMatchObject({ ok: false, error: { retryable: false } });
    await bad.stop();
  });
});
