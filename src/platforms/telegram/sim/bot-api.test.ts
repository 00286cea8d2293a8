// The simulator through the real grammY client and raw fetch: getMe, a message reaching a running
// bot and its reply landing in the chat's log, the confirmed offset, and the refusals Telegram
// gives, each in its exact wire shape.
import { Bot, GrammyError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTelegramSim, type TelegramSim } from "./server.js";

let sim: TelegramSim;
const bots: Bot[] = [];

beforeEach(async () => {
  sim = await startTelegramSim();
});

afterEach(async () => {
  for (const bot of bots.splice(0)) if (bot.isRunning()) await bot.stop().catch(() => undefined);
  await sim.close();
});

function newBot(): Bot {
  const bot = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } });
  bots.push(bot);
  return bot;
}

async function raw(method: string, body?: unknown, token = sim.token) {
  const response = await fetch(`${sim.apiRoot}/bot${token}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function grammyError(call: Promise<unknown>): Promise<GrammyError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GrammyError);
  return error as GrammyError;
}

describe("Telegram simulator: the Bot API", () => {
  it("answers getMe with the bot, over POST and GET", async () => {
    const me = await newBot().api.getMe();
    expect(me).toMatchObject({ id: 123456789, is_bot: true, username: "tenax_test_bot" });
    const get = await fetch(`${sim.apiRoot}/bot${sim.token}/getMe`);
    expect(await get.json()).toMatchObject({ ok: true, result: { id: 123456789 } });
    expect(sim.calls("getMe").map((c) => c.verb)).toEqual(["POST", "GET"]);
  });

  it("reads parameters from the query string and from an urlencoded form, as JSON where they are", async () => {
    sim.registerChat({ id: 5 });
    const markup = JSON.stringify({ inline_keyboard: [[{ text: "Go", callback_data: "go" }]] });
    const query = new URLSearchParams({ chat_id: "5", text: "from GET", reply_markup: markup });
    const get = await fetch(`${sim.apiRoot}/bot${sim.token}/sendMessage?${query}`);
    expect(await get.json()).toMatchObject({ ok: true, result: { chat: { id: 5 }, text: "from GET" } });
    const form = await fetch(`${sim.apiRoot}/bot${sim.token}/sendmessage`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ chat_id: "5", text: "42" }).toString(),
    });
    expect(await form.json()).toMatchObject({ ok: true, result: { text: "42" } });
    const [first, second] = sim.sentMessages(5);
    expect(first?.reply_markup?.inline_keyboard[0]?.[0]?.callback_data).toBe("go");
    // The method name is read without regard to case, and recorded as Telegram names it.
    expect(second?.text).toBe("42");
    expect(sim.calls().map((c) => c.method)).toEqual(["sendMessage", "sendMessage"]);
  });

  it("refuses a wrong token with 401 and an unknown method with 404", async () => {
    const bad = await raw("getMe", {}, "1:wrong");
    expect(bad).toEqual({ status: 401, body: { ok: false, error_code: 401, description: "Unauthorized" } });
    const unknown = await raw("sendTelepathy");
    expect(unknown).toEqual({ status: 404, body: { ok: false, error_code: 404, description: "Not Found" } });
    const error = await grammyError(new Bot("1:wrong", { client: { apiRoot: sim.apiRoot } }).api.getMe());
    expect(error.error_code).toBe(401);
  });

  it("delivers an injected message to a running bot, logs its reply, and confirms the offset", async () => {
    const bot = newBot();
    const seen: string[] = [];
    bot.on("message:text", async (ctx) => {
      seen.push(ctx.message.text);
      await ctx.reply(`echo: ${ctx.message.text}`);
    });
    const running = bot.start({ timeout: 10 });
    await sim.waitForPoll();
    const injected = sim.injectMessage({ chat: 42, from: { id: 42, first_name: "Ada" }, text: "hello" });
    const [reply] = await sim.waitForMessages(42, 1);
    expect(seen).toEqual(["hello"]);
    expect(reply).toMatchObject({ chat_id: 42, text: "echo: hello", message_id: 2 });
    // The poll that carried the update held the request until it came (a real long poll).
    const polls = sim.calls("getUpdates");
    expect(polls.some((c) => c.params.timeout === 10)).toBe(true);
    await bot.stop();
    await running;
    expect(sim.pendingUpdates()).toBe(0);
    // A restarted bot does not get the confirmed update again.
    const again = newBot();
    const second: string[] = [];
    again.on("message", (ctx) => {
      second.push(ctx.message.text ?? "");
    });
    const restarted = again.start({ timeout: 1 });
    await sim.waitForPoll();
    sim.injectMessage({ chat: 42, text: "second" });
    await sim.waitForCalls("getUpdates", polls.length + 3);
    await again.stop();
    await restarted;
    expect(second).toEqual(["second"]);
    expect(injected.update_id).toBeGreaterThan(0);
  });

  it("holds a long poll until an update comes, and answers [] when the timeout passes", async () => {
    const started = Date.now();
    const empty = await raw("getUpdates", { timeout: 1 });
    expect(empty).toEqual({ status: 200, body: { ok: true, result: [] } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const pending = raw("getUpdates", { timeout: 20 });
    await sim.waitForPoll();
    const { update_id } = sim.injectMessage({ chat: 7, text: "ping" });
    const answered = await pending;
    expect(answered.body.result).toMatchObject([
      { update_id, message: { text: "ping", chat: { id: 7, type: "private" } } },
    ]);
    // Not confirmed yet: it comes again until an offset above it is sent.
    expect((await raw("getUpdates", {})).body.result).toHaveLength(1);
    expect((await raw("getUpdates", { offset: update_id + 1 })).body.result).toEqual([]);
    expect(sim.pendingUpdates()).toBe(0);
  });

  it("refuses a text over 4096 characters, an empty one, and an unknown chat", async () => {
    sim.registerChat({ id: 5 });
    const api = newBot().api;
    const long = await raw("sendMessage", { chat_id: 5, text: "x".repeat(4097) });
    expect(long).toEqual({
      status: 400,
      body: { ok: false, error_code: 400, description: "Bad Request: message is too long" },
    });
    expect((await api.sendMessage(5, "x".repeat(4096))).text).toHaveLength(4096);
    const empty = await grammyError(api.sendMessage(5, ""));
    expect([empty.error_code, empty.description]).toEqual([400, "Bad Request: message text is empty"]);
    const unknown = await grammyError(api.sendMessage(999, "hi"));
    expect([unknown.error_code, unknown.description]).toEqual([400, "Bad Request: chat not found"]);
    expect(sim.sentMessages(5)).toHaveLength(1);
  });

  it("refuses entities that do not parse, in MarkdownV2 and HTML, and keeps those that do", async () => {
    sim.registerChat({ id: 5 });
    const api = newBot().api;
    const dot = await raw("sendMessage", { chat_id: 5, text: "Done.", parse_mode: "MarkdownV2" });
    expect(dot.status).toBe(400);
    expect(dot.body.description).toBe(
      "Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'",
    );
    const open = await grammyError(api.sendMessage(5, "*bold", { parse_mode: "MarkdownV2" }));
    expect(open.description).toBe(
      "Bad Request: can't parse entities: Can't find end of Bold entity at byte offset 0",
    );
    const html = await grammyError(api.sendMessage(5, "<b>bold", { parse_mode: "HTML" }));
    expect(html.description).toMatch(
      /^Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"/,
    );
    const tag = await grammyError(api.sendMessage(5, "<blink>x</blink>", { parse_mode: "HTML" }));
    expect(tag.description).toBe(
      'Bad Request: can\'t parse entities: Unsupported start tag "blink" at byte offset 0',
    );
    const good = await api.sendMessage(5, "*Done*\\.", { parse_mode: "MarkdownV2" });
    expect(good.text).toBe("Done.");
    expect(good.entities).toEqual([{ type: "bold", offset: 0, length: 4 }]);
    // The same text with no parse_mode is plain and fine.
    expect((await api.sendMessage(5, "Done.")).text).toBe("Done.");
  });

  it("edits the bot's message with its history, and refuses a missing or unchanged one", async () => {
    sim.registerChat({ id: 5 });
    const api = newBot().api;
    const sent = await api.sendMessage(5, "thinking");
    const edited = await api.editMessageText(5, sent.message_id, "done");
    expect(edited).toMatchObject({ message_id: sent.message_id, text: "done" });
    const missing = await raw("editMessageText", { chat_id: 5, message_id: 999, text: "x" });
    expect(missing).toEqual({
      status: 400,
      body: { ok: false, error_code: 400, description: "Bad Request: message to edit not found" },
    });
    const same = await grammyError(api.editMessageText(5, sent.message_id, "done"));
    expect(same.error_code).toBe(400);
    expect(same.description).toMatch(/^Bad Request: message is not modified: /);
    const [log] = sim.sentMessages(5);
    expect(log?.text).toBe("done");
    expect(log?.edits.map((e) => e.previous.text)).toEqual(["thinking"]);
  });

  it("deletes the bot's messages and keeps the command menu per scope", async () => {
    sim.registerChat({ id: 5 });
    const api = newBot().api;
    const sent = await api.sendMessage(5, "oops");
    expect(await api.deleteMessage(5, sent.message_id)).toBe(true);
    expect(sim.sentMessages(5)).toMatchObject([{ text: "oops", deleted: true }]);
    const again = await grammyError(api.deleteMessage(5, sent.message_id));
    expect(again.description).toBe("Bad Request: message to delete not found");
    await api.setMyCommands([{ command: "new", description: "Start a new session" }]);
    await api.setMyCommands([{ command: "stop", description: "Stop" }], {
      scope: { type: "all_group_chats" },
    });
    expect(await api.getMyCommands()).toEqual([{ command: "new", description: "Start a new session" }]);
    const bad = await grammyError(api.setMyCommands([{ command: "New Session", description: "x" }]));
    expect(bad.description).toBe("Bad Request: BOT_COMMAND_INVALID");
  });

  it("takes reply_parameters and threads, and refuses a reply to a message that is not there", async () => {
    const { message } = sim.injectMessage({
      chat: { id: -100, type: "supergroup", title: "Team", is_forum: true },
      from: 9,
      text: "q",
      message_thread_id: 3,
    });
    const api = newBot().api;
    const answer = await api.sendMessage(-100, "a", {
      reply_parameters: { message_id: message?.message_id ?? 0 },
      message_thread_id: 3,
    });
    expect(answer.reply_to_message?.text).toBe("q");
    expect(answer.message_thread_id).toBe(3);
    expect(answer.chat).toMatchObject({ id: -100, type: "supergroup", title: "Team" });
    const gone = await grammyError(api.sendMessage(-100, "a", { reply_parameters: { message_id: 77 } }));
    expect(gone.description).toBe("Bad Request: message to be replied not found");
    await api.sendChatAction(-100, "typing", { message_thread_id: 3 });
    expect(sim.chatActions(-100)).toMatchObject([{ action: "typing", message_thread_id: 3 }]);
  });

  it("refuses a second getUpdates: the held poll ends with 409, and grammY's bot.start rejects", async () => {
    const first = raw("getUpdates", { timeout: 20 });
    await sim.waitForPoll();
    const second = raw("getUpdates", { timeout: 1 });
    expect(await first).toEqual({
      status: 409,
      body: {
        ok: false,
        error_code: 409,
        description:
          "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
      },
    });
    expect((await second).status).toBe(200);
    const bot = newBot();
    bot.on("message", () => undefined);
    const running = bot.start({ timeout: 20 });
    await sim.waitForPoll();
    void raw("getUpdates", { timeout: 1 });
    const error = await grammyError(running);
    expect(error.error_code).toBe(409);
  });

  it("answers a callback query press and logs answerCallbackQuery", async () => {
    const bot = newBot();
    sim.registerChat({ id: 8 });
    const sent = await bot.api.sendMessage(8, "approve?", {
      reply_markup: {
        inline_keyboard: [
          [
            { text: "Yes", callback_data: "yes" },
            { text: "No", callback_data: "no" },
          ],
        ],
      },
    });
    const pressed: string[] = [];
    bot.on("callback_query:data", async (ctx) => {
      pressed.push(`${ctx.callbackQuery.data} on ${ctx.callbackQuery.message?.message_id}`);
      await ctx.answerCallbackQuery({ text: "noted" });
    });
    const running = bot.start({ timeout: 10 });
    await sim.waitForPoll();
    expect(() => sim.pressButton({ chat_id: 8, message_id: sent.message_id, data: "maybe" })).toThrow(
      /has no button with callback_data "maybe"; it has "yes", "no"/,
    );
    const { callback_query_id } = sim.pressButton({ chat_id: 8, message_id: sent.message_id, data: "yes" });
    await sim.waitForCalls("answerCallbackQuery", 1);
    await bot.stop();
    await running;
    expect(pressed).toEqual([`yes on ${sent.message_id}`]);
    expect(sim.callbackAnswers()).toMatchObject([
      { callback_query_id, data: "yes", text: "noted", chat_id: 8 },
    ]);
    const twice = await raw("answerCallbackQuery", { callback_query_id });
    expect(twice.body.description).toBe(
      "Bad Request: query is too old and response timeout expired or query ID is invalid",
    );
  });
});
