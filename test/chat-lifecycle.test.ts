// The chat service across a shutdown and a restart, on one store: one notice per chat however many
// of its sessions run, never blocking past its bound; after a crash, a new service answers what
// the inbox still holds once; turns the gateway resumed are handed over, their chats told "back
// online" once, then answered.
import { describe, expect, it } from "vitest";
import type { TurnResult } from "../src/agent/turn.js";
import { chatSessionOp, listChatSessions } from "../src/platforms/chat-sessions.js";
import { BACK_ONLINE, notResumed, SHUTDOWN_RESTARTING } from "../src/platforms/chat-texts.js";
import { chatSetup } from "./helpers/chat.js";

const hang = { type: "hang" as const, phase: "before_headers" as const };
const group = (user: string) => ({ user, chat: "-1001", type: "group" as const });

describe("chat service: shutdown and restart", () => {
  it("sends one shutdown notice to a group chat with two running sessions; after the restart one 'back online', then both answers", async () => {
    const t = await chatSetup();
    const a = await t.service();
    t.sim.script([hang, hang]);
    await t.platform.receive(t.text("from 42", group("42")));
    await t.platform.receive(t.text("from 43", group("43")));
    // An idle private chat gets no notice.
    await t.platform.receive(t.text("idle here"));
    await t.until(() => t.sim.requests().length === 3, "three model calls");
    await t.until(() => t.sent("42").length === 1, "the private answer");
    expect(await listChatSessions(t.store)).toHaveLength(3);

    expect(await a.shutdownNotice({ restarting: true, timeoutMs: 2_000 })).toEqual({ chats: 1, sent: 1 });
    expect(t.sent("-1001")).toEqual([SHUTDOWN_RESTARTING]);
    // The drain runs out: the turns are interrupted as a shutdown does, and left for the resume.
    expect(t.host.interruptAll("the gateway is shutting down")).toBe(2);
    await t.settle(a);
    a.stop();
    expect(t.sent("-1001")).toEqual([SHUTDOWN_RESTARTING]);
    expect((await a.inbox.pending()).map((e) => e.session_key).sort()).toEqual([
      "telegram:-1001:u=42",
      "telegram:-1001:u=43",
    ]);

    // The restart: the gateway resumes both turns and hands them to the new service, then recover().
    const b = await t.service();
    const results: Promise<TurnResult>[] = [];
    for (const record of (await listChatSessions(t.store)).filter((r) => r.running !== null)) {
      const turn = (await t.store.getTurns(record.session_id)).at(-1);
      expect(turn?.status).toBe("interrupted");
      const result = t.agent.turn({
        sessionId: record.session_id,
        text: "",
        resume: { turnId: turn?.id ?? "" },
        cwd: t.project,
      });
      results.push(result);
      expect(await b.resumed(record.session_id, result)).toBe(true);
    }
    expect(await b.resumed("ses_unknown", Promise.resolve({} as TurnResult))).toBe(false);
    expect(await b.recover()).toEqual({ queued: 0, resumed: 2, answered: 0, inline: 0, waiting: 0 });
    await Promise.all(results);
    await t.settle(b);
    const chat = t.sent("-1001");
    expect(chat.slice(0, 2)).toEqual([SHUTDOWN_RESTARTING, BACK_ONLINE]);
    // The simulator echoes the resumed turns' last user message: the question, then the resume note.
    expect(
      chat
        .slice(2)
        .map((x) => x.split("\n")[0])
        .sort(),
    ).toEqual(["echo: from 42", "echo: from 43"]);
    expect(await b.inbox.pending()).toEqual([]);
    expect((await listChatSessions(t.store)).every((r) => r.running === null)).toBe(true);
    // A third start answers nothing again.
    const c = await t.service();
    expect(await c.recover()).toEqual({ queued: 0, resumed: 0, answered: 0, inline: 0, waiting: 0 });
    await t.settle(c);
    expect(t.sent("-1001")).toHaveLength(4);
  });

  it("never waits on a platform that does not answer past timeoutMs, and never throws", async () => {
    const t = await chatSetup();
    const s = await t.service();
    t.sim.script([hang]);
    await t.platform.receive(t.text("slow"));
    await t.until(() => t.sim.requests().length === 1, "the model call");
    t.platform.perform = (op) => {
      t.platform.performed.push(op);
      return new Promise(() => undefined);
    };
    const started = Date.now();
    expect(await s.shutdownNotice({ restarting: false, timeoutMs: 200 })).toEqual({ chats: 1, sent: 0 });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(t.platform.sends().at(-1)?.text).toBe(
      "Tenax is shutting down; your running request is cut short.",
    );
  });

  it("a new service on the same store answers a message the crash left in the inbox once", async () => {
    const t = await chatSetup();
    const a = await t.service();
    // The process died right after the sink committed the update: nothing ran.
    const event = t.text("survive the crash");
    await a.inbox.accept(event);
    a.stop();
    const b = await t.service();
    expect(await b.recover()).toEqual({ queued: 1, resumed: 0, answered: 0, inline: 0, waiting: 0 });
    await t.settle(b);
    expect(t.sent("42")).toEqual(["echo: survive the crash"]);
    // The platform redelivers it (its ack was lost with the process), and a third start recovers.
    await t.platform.receive(event);
    const c = await t.service();
    expect((await c.recover()).queued).toBe(0);
    await t.settle(c);
    expect(t.sent("42")).toEqual(["echo: survive the crash"]);
    expect(t.sim.requests()).toHaveLength(1);
  });

  it("a message whose turn another live process still runs waits, with its session's later ones, until that turn ends", async () => {
    const t = await chatSetup();
    const a = await t.service();
    const { entry } = await a.inbox.accept(t.text("running elsewhere"));
    const { entry: later } = await a.inbox.accept(t.text("sent after it"));
    a.stop();
    // The old holder of the platforms marked the session and began the turn; it still runs there.
    const { id, op } = t.agent.newSessionOp({ source: "telegram" });
    const now = Date.now();
    const mark = chatSessionOp(
      {
        session_key: entry.session_key,
        platform: "telegram",
        chat_key: entry.chat_key,
        chat: entry.event.chat,
        session_id: id,
        created_at: now,
        updated_at: now,
        running: { inbox_key: entry.key, session_id: id, turns_before: 0, at: now },
        last_error: null,
        last_error_at: null,
      },
      now,
    );
    await t.store.write([op, mark.op]);
    await t.store.beginTurn({
      sessionId: id,
      leaseMs: 60_000,
      owner: "inst:i_elsewhere",
      question: { role: "user", content: "running elsewhere" },
    }).applied;
    const alive = new Set(["inst:i_elsewhere"]);
    const b = await t.service({ stillRuns: (owner) => alive.has(owner) });
    expect(await b.recover()).toEqual({ queued: 0, resumed: 0, answered: 0, inline: 0, waiting: 2 });
    await t.settle(b);
    expect(t.sent("42")).toEqual([]);
    expect((await b.inbox.get("telegram", later.update_id))?.state).toBe("pending");
    // That process is gone and its turn was never resumed: told once, then the later one runs.
    alive.clear();
    expect(await b.recover()).toEqual({ queued: 1, resumed: 0, answered: 1, inline: 0, waiting: 0 });
    await t.settle(b);
    expect(t.sent("42")[0]).toBe(notResumed());
    expect(t.sent("42")).toHaveLength(2);
  });

  it("after a crash between a turn's end and its answer, answers from the stored reply without running it again", async () => {
    const t = await chatSetup();
    const a = await t.service();
    const { entry } = await a.inbox.accept(t.text("almost answered"));
    // What the service writes before it starts a turn, then the turn itself, then the crash.
    const { id, op } = t.agent.newSessionOp({ source: "telegram" });
    const now = Date.now();
    const mark = chatSessionOp(
      {
        session_key: entry.session_key,
        platform: "telegram",
        chat_key: entry.chat_key,
        chat: entry.event.chat,
        session_id: id,
        created_at: now,
        updated_at: now,
        running: { inbox_key: entry.key, session_id: id, turns_before: 0, at: now },
        last_error: null,
        last_error_at: null,
      },
      now,
    );
    await t.store.write([op, mark.op]);
    await t.agent.turn({ sessionId: id, text: "almost answered", cwd: t.project });
    a.stop();
    const b = await t.service();
    expect(await b.recover()).toEqual({ queued: 0, resumed: 0, answered: 1, inline: 0, waiting: 0 });
    await t.settle(b);
    expect(t.sent("42")).toEqual(["echo: almost answered"]);
    expect(t.sim.requests()).toHaveLength(1);
  });

  it("tells a chat whose turn was cut by the restart and not resumed to send /retry, once; a command left pending runs", async () => {
    const t = await chatSetup();
    const a = await t.service();
    t.sim.script([hang]);
    await t.platform.receive(t.text("cut short"));
    await t.until(() => t.sim.requests().length === 1, "the model call");
    t.host.interruptAll("the gateway is shutting down");
    await t.settle(a);
    a.stop();
    await a.inbox.accept(t.text("/status"));
    const b = await t.service();
    expect(await b.recover()).toEqual({ queued: 0, resumed: 0, answered: 1, inline: 1, waiting: 0 });
    await t.settle(b);
    const [told, status] = t.sent("42");
    expect(told).toBe(notResumed());
    expect(status).toMatch(/^Idle\./);
    const c = await t.service();
    await c.recover();
    await t.settle(c);
    expect(t.sent("42")).toHaveLength(2);
  });

  it("waits while the host is full and starts the turn when it has room; a stopping host leaves the message pending", async () => {
    const t = await chatSetup();
    let refusals = 0;
    let stopping = false;
    const host = {
      ...t.host,
      start: async (request: Parameters<typeof t.host.start>[0]) => {
        if (stopping) throw Object.assign(new Error("shutting down"), { code: "shutting_down" });
        if (refusals++ < 2) throw Object.assign(new Error("full"), { code: "too_many_turns" });
        return t.host.start(request);
      },
    };
    const s = await t.service({ host });
    await t.platform.receive(t.text("when there is room"));
    await t.settle(s);
    expect(refusals).toBe(3);
    expect(t.sent("42")).toEqual(["echo: when there is room"]);
    stopping = true;
    await t.platform.receive(t.text("during the stop"));
    await t.settle(s);
    expect(t.sent("42")).toHaveLength(1);
    expect((await s.inbox.pending()).map((e) => e.event.type === "message" && e.event.text)).toEqual([
      "during the stop",
    ]);
  });
});
