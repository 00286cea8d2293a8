// The control API from outside the process: everything a gateway child's test needs, over fetch
// only (inject a message and a button press, read what the bot sent and did, script faults, wait).
import { Bot } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTelegramSim, type TelegramSim } from "./server.js";

let sim: TelegramSim;

beforeEach(async () => {
  sim = await startTelegramSim();
});

afterEach(async () => {
  await sim.close();
});

async function control(method: "GET" | "POST" | "DELETE", path: string, body?: unknown) {
  const response = await fetch(`${sim.controlUrl}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: (await response.json()) as { ok: boolean; result?: unknown; description?: string },
  };
}

describe("Telegram simulator: the HTTP control API", () => {
  it("injects a message, waits for the bot's reply, and reads it back with the call log", async () => {
    const bot = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } });
    bot.on("message:text", async (ctx) => {
      await ctx.replyWithChatAction("typing");
      await ctx.reply(`got ${ctx.message.text}`, {
        reply_markup: { inline_keyboard: [[{ text: "Again", callback_data: "again" }]] },
      });
    });
    bot.on("callback_query:data", (ctx) => ctx.answerCallbackQuery());
    const running = bot.start({ timeout: 5 });
    expect((await control("GET", "/wait/poll?timeout_ms=3000")).status).toBe(200);
    const injected = await control("POST", "/messages", {
      chat: { id: 77, type: "private" },
      from: { id: 77, first_name: "Ada" },
      text: "hi",
    });
    expect(injected.body.result).toMatchObject({
      update_id: expect.any(Number),
      message: { text: "hi", chat: { id: 77 } },
    });
    const waited = await control("GET", "/wait/messages?chat_id=77&count=1&timeout_ms=3000");
    expect(waited.body.result).toMatchObject([{ text: "got hi", message_id: 2 }]);
    const press = await control("POST", "/callback-queries", { chat_id: 77, message_id: 2, data: "again" });
    expect(press.status).toBe(200);
    expect(
      (await control("GET", "/wait/calls?method=answerCallbackQuery&count=1&timeout_ms=3000")).status,
    ).toBe(200);
    await bot.stop();
    await running;
    expect((await control("GET", "/chats/77/messages")).body.result).toMatchObject([{ text: "got hi" }]);
    expect((await control("GET", "/chat-actions?chat_id=77")).body.result).toMatchObject([
      { action: "typing" },
    ]);
    expect((await control("GET", "/callback-answers")).body.result).toMatchObject([
      { data: "again", chat_id: 77 },
    ]);
    const calls = (await control("GET", "/calls?method=sendMessage")).body.result as { params: unknown }[];
    expect(calls.map((c) => c.params)).toMatchObject([{ chat_id: 77, text: "got hi" }]);
  });

  it("scripts faults and an outage over HTTP, and refuses a bad one with 400", async () => {
    const api = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } }).api;
    const queued = await control("POST", "/faults", [
      { type: "rate_limit", method: "getMe", retry_after: 3 },
    ]);
    expect(queued.body.result).toEqual({ queued: 1 });
    await expect(api.getMe()).rejects.toMatchObject({ error_code: 429, parameters: { retry_after: 3 } });
    const bad = await control("POST", "/faults", { type: "rate_limit" });
    expect(bad.status).toBe(400);
    expect(bad.body.description).toMatch(/^Bad Request: invalid Telegram simulator fault: .*retry_after/);
    expect((await control("POST", "/outage", { mode: "error", status: 504 })).status).toBe(200);
    await expect(api.getMe()).rejects.toMatchObject({ error_code: 504 });
    await control("DELETE", "/outage");
    expect((await api.getMe()).is_bot).toBe(true);
    const state = await control("GET", "/state");
    expect(state.body.result).toMatchObject({ faults_queued: 0, outage: null, pending_updates: 0 });
  });

  it("says what it saw when a wait runs out, and refuses a press on a message that is not there", async () => {
    await control("POST", "/chats", { id: 5 });
    const api = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } }).api;
    await api.sendMessage(5, "only one");
    const waited = await control("GET", "/wait/messages?chat_id=5&count=2&timeout_ms=100");
    expect(waited.status).toBe(408);
    expect(waited.body.description).toMatch(
      /the bot sent 1 of 2 messages to chat 5: "only one"; calls seen: sendMessage 200/,
    );
    const press = await control("POST", "/callback-queries", { chat_id: 5, message_id: 9, data: "x" });
    expect(press.status).toBe(400);
    expect(press.body.description).toBe("Bad Request: the bot sent no message 9 in chat 5");
    await control("POST", "/reset");
    expect((await control("GET", "/calls")).body.result).toEqual([]);
  });
});
