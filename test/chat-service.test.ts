// The chat service on a real store, real agent turns over the simulator and an in-memory
// platform: strangers refused and never stored or run, one chat's messages answered one at a time
// in order, a redelivered update run once, and the inline commands /stop, /status, /new, /retry.
import { describe, expect, it } from "vitest";
import { listChatSessions, SESSION_KIND } from "../src/platforms/chat-sessions.js";
import { INBOX_KIND } from "../src/platforms/inbox.js";
import { listChatEntries as listOutboxEntries } from "../src/platforms/outbox-records.js";
import { chatSetup } from "./helpers/chat.js";

/** The user messages the model was sent in request `i` (0-based). */
function userTexts(sim: Awaited<ReturnType<typeof chatSetup>>["sim"], i: number): string[] {
  const body = sim.requests()[i]?.body as { messages?: Array<{ role: string; content: string }> } | undefined;
  return (body?.messages ?? []).filter((m) => m.role === "user").map((m) => m.content);
}

const hang = { type: "hang" as const, phase: "before_headers" as const };

describe("chat service: who it answers", () => {
  it("refuses a stranger once per chat, acknowledges the update, and stores and runs nothing of theirs", async () => {
    const t = await chatSetup();
    const s = await t.service();
    // The sink resolves: the adapter acknowledges the update, so the platform does not resend it.
    await t.platform.receive(t.text("hello", { user: "7" }));
    await t.platform.receive(t.text("/status", { user: "7" }));
    await t.platform.receive(t.text("again", { user: "7" }));
    await t.settle(s);
    expect(t.sent()).toEqual([
      "Sorry, this bot answers only its allowed users. Your telegram user id is 7; the operator can add it to platforms.telegram.allowed_users in config.yaml.",
    ]);
    expect(t.sim.requests()).toEqual([]);
    expect(await t.store.listRecords(INBOX_KIND)).toEqual([]);
    expect(await t.store.listRecords(SESSION_KIND)).toEqual([]);
    expect((await t.store.listSessions()).map((x) => x.source)).not.toContain("telegram");
    // An allowed user in another chat is answered as ever.
    await t.platform.receive(t.text("hi there"));
    await t.settle(s);
    expect(t.sent("42")).toEqual(["echo: hi there"]);
  });

  it('lets anyone through on a platform allowed to "anyone" (the webhook, checked by the gateway key)', async () => {
    const t = await chatSetup();
    const s = await t.service({ allowedUsers: { telegram: "anyone" } });
    await t.platform.receive(t.text("from a tool", { user: "tool-1" }));
    await t.settle(s);
    expect(t.sent("tool-1")).toEqual(["echo: from a tool"]);
  });
});

describe("chat service: in order, none lost", () => {
  it("keeps answering a chat after recover() looked at its idle lane (a recheck while another chat's turn runs elsewhere)", async () => {
    const t = await chatSetup();
    const s = await t.service();
    await t.platform.receive(t.text("first"));
    await t.settle(s);
    expect(t.sent("42")).toEqual(["echo: first"]);
    // The gateway calls recover() again every 2 s while a message waits for a turn another gateway
    // runs; each call pumps every lane, idle ones too. An idle lane must still take what comes next.
    await s.recover();
    await s.recover();
    await t.platform.receive(t.text("second"));
    await t.until(() => t.sent("42").length === 2, "the answer to the message after the recover");
    expect(t.sent("42")).toEqual(["echo: first", "echo: second"]);
  });

  it("answers three messages sent at once to one chat in order, one turn at a time, in one session", async () => {
    const t = await chatSetup();
    const s = await t.service();
    // The first turn is slow: the others wait behind it rather than run beside it.
    t.sim.script([{ type: "reply", text: "first answer", chunk_delay_ms: 40, chunk_size: 2 }]);
    await Promise.all(["one", "two", "three"].map((x) => t.platform.receive(t.text(x))));
    await t.settle(s);
    expect(t.sent("42")).toEqual(["first answer", "echo: two", "echo: three"]);
    expect(t.sim.requests()).toHaveLength(3);
    // Each turn saw the ones before it: they ran one after the other, in arrival order.
    expect(userTexts(t.sim, 1)).toEqual(["one", "two"]);
    expect(userTexts(t.sim, 2)).toEqual(["one", "two", "three"]);
    const [record] = await listChatSessions(t.store);
    expect(record).toMatchObject({ session_key: "telegram:42", running: null });
    expect(await t.store.getSession(record?.session_id ?? "")).toMatchObject({
      source: "telegram",
      title: "telegram: user42",
    });
    expect(await s.inbox.pending()).toEqual([]);
  });

  it("runs a redelivered update once, whether it comes again at once or later", async () => {
    const t = await chatSetup();
    const s = await t.service();
    const event = t.text("only once");
    await Promise.all([t.platform.receive(event), t.platform.receive(event)]);
    await t.settle(s);
    await t.platform.receive(event);
    await t.settle(s);
    expect(t.sim.requests()).toHaveLength(1);
    expect(t.sent("42")).toEqual(["echo: only once"]);
    expect(await t.store.listRecords(INBOX_KIND)).toHaveLength(1);
  });

  it("answers a failed turn with a line naming the layer, and /status shows it as the last error", async () => {
    const t = await chatSetup();
    const s = await t.service();
    t.sim.script([
      {
        type: "error",
        status: 400,
        body: { error: { message: "bad request", type: "invalid_request_error" } },
      },
    ]);
    await t.platform.receive(t.text("break"));
    await t.settle(s);
    const [answer] = t.sent("42");
    expect(answer).toMatch(/^Tenax could not answer \(provider layer\): /);
    await t.platform.receive(t.text("/status"));
    await t.settle(s);
    expect(t.sent("42")[1]).toMatch(/Last error: (?!none)/);
    expect((await s.status()).telegram?.last_error).not.toBeNull();
  });
});

describe("chat service: sessions and messages", () => {
  it("gives each user of a group chat a session of their own, and refuses a stranger there once", async () => {
    const t = await chatSetup();
    const s = await t.service();
    const group = (user: string) => ({ user, chat: "-1001", type: "group" as const });
    await t.platform.receive(t.text("hi from 42", group("42")));
    await t.platform.receive(t.text("hi from 43", group("43")));
    await t.platform.receive(t.text("me too", group("9")));
    await t.platform.receive(t.text("me again", group("9")));
    await t.settle(s);
    expect((await listChatSessions(t.store)).map((r) => r.session_key).sort()).toEqual([
      "telegram:-1001:u=42",
      "telegram:-1001:u=43",
    ]);
    expect(new Set((await listChatSessions(t.store)).map((r) => r.session_id)).size).toBe(2);
    const texts = t.sent("-1001");
    expect(texts.filter((x) => x.startsWith("Sorry"))).toHaveLength(1);
    expect(texts.filter((x) => x.startsWith("echo")).sort()).toEqual([
      "echo: hi from 42",
      "echo: hi from 43",
    ]);
    // In a group the answer quotes the message it answers.
    expect(t.platform.sends().find((op) => op.text === "echo: hi from 42")?.reply_to).toBeDefined();
    expect(t.sim.requests()).toHaveLength(2);
  });

  it("queues a reply the adapter cuts as one outbox entry per platform message, sent in order", async () => {
    const t = await chatSetup();
    t.platform.split = (text) => text.match(/.{1,10}/gs) ?? [text];
    const s = await t.service();
    t.sim.script([{ type: "reply", text: "abcdefghijklmnopqrstuvwxy" }]);
    await t.platform.receive(t.text("long one"));
    await t.settle(s);
    expect(t.sent("42")).toEqual(["abcdefghij", "klmnopqrst", "uvwxy"]);
    const entries = (await listOutboxEntries(t.store)).sort((a, b) => (a.order < b.order ? -1 : 1));
    expect(entries.map((e) => [e.key.split("/").slice(1).join("/"), e.state])).toEqual([
      ["ans/1/0", "delivered"],
      ["ans/1/1", "delivered"],
      ["ans/1/2", "delivered"],
    ]);
    expect(entries.every((e) => e.payload.format === "markdown")).toBe(true);
  });
});

describe("chat service: commands run inline", () => {
  it("/status answers at once while a turn runs; /stop interrupts it and its answer says so", async () => {
    const t = await chatSetup();
    const s = await t.service();
    t.sim.script([hang]);
    await t.platform.receive(t.text("long job"));
    await t.until(() => t.sim.requests().length === 1, "the first model call");
    await t.platform.receive(t.text("queued behind"));
    await t.platform.receive(t.text("/status"));
    await t.until(() => t.sent("42").length === 1, "the /status answer");
    const [status] = t.sent("42");
    const [record] = await listChatSessions(t.store);
    expect(status).toContain("Running");
    expect(status).toContain("Messages waiting: 1.");
    expect(status).toContain(`Session: ${record?.session_id}.`);
    expect((await s.status()).telegram).toMatchObject({ running: 1, waiting: 1 });
    expect((await s.status()).telegram?.last_update_at).not.toBeNull();
    // The typing indicator goes out while the turn runs.
    await t.until(() => t.ops("typing").length >= 2, "typing, twice");
    await t.platform.receive(t.text("/stop"));
    await t.settle(s);
    expect(t.sent("42")).toEqual([
      status,
      "Stopping the running turn.",
      "Stopped: the turn was interrupted (by /stop, or from outside with tenax sessions stop). Send /retry to run the message again.",
      "echo: queued behind",
    ]);
    expect((await s.status()).telegram).toMatchObject({ running: 0, waiting: 0 });
    const typing = t.ops("typing").length;
    await new Promise((r) => setTimeout(r, 150));
    expect(t.ops("typing").length).toBe(typing);
  });

  it("/stop with nothing running says so", async () => {
    const t = await chatSetup();
    const s = await t.service();
    await t.platform.receive(t.text("/stop"));
    await t.settle(s);
    expect(t.sent("42")).toEqual(["Nothing is running."]);
    expect(t.sim.requests()).toEqual([]);
  });

  it("/new starts a fresh session for the chat: the next message has no history", async () => {
    const t = await chatSetup();
    const s = await t.service();
    await t.platform.receive(t.text("remember this"));
    await t.settle(s);
    const before = (await listChatSessions(t.store))[0]?.session_id;
    await t.platform.receive(t.text("/new"));
    await t.settle(s);
    const after = (await listChatSessions(t.store))[0]?.session_id;
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect(t.sent("42")[1]).toBe(`Started a new session (${after}).`);
    await t.platform.receive(t.text("fresh start"));
    await t.settle(s);
    expect(userTexts(t.sim, 1)).toEqual(["fresh start"]);
    expect((await t.store.getSession(after ?? ""))?.message_count).toBe(2);
  });

  it("/retry runs the session's last message again; with none it says so", async () => {
    const t = await chatSetup();
    const s = await t.service();
    await t.platform.receive(t.text("/retry"));
    await t.settle(s);
    expect(t.sent("42")).toEqual(["There is no earlier message in this session to run again."]);
    t.sim.script([
      { type: "error", status: 400, body: { error: { message: "no", type: "invalid_request_error" } } },
    ]);
    await t.platform.receive(t.text("try me"));
    await t.settle(s);
    await t.platform.receive(t.text("/retry"));
    await t.settle(s);
    expect(t.sent("42").slice(2)).toEqual(["Running your last message again.", "echo: try me"]);
    expect(t.sim.requests()).toHaveLength(2);
    expect(userTexts(t.sim, 1).at(-1)).toBe("try me");
  });
});
