// A gateway killed with SIGKILL in the middle of a turn, then started again: the turn is resumed
// once, from what was saved, without repeating a tool call that may have taken effect; a turn
// that keeps killing its process is suspended at the third interruption and never resumed again;
// with gateway.auto_resume off it is only reaped; and a turn left by a dead process while the
// gateway runs is picked up by the watchdog.
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { RESUME_NOTE } from "../src/agent/turn-resume.js";
import type { Simulator } from "../src/llm/simulator/server.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";
import { deadPid } from "./helpers/resume.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

/** Send a message without waiting for the reply (the gateway is killed before it comes). */
function send(gw: GatewayProcess, text: string): void {
  gw.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  }).catch(() => {});
}

async function kill9(gateway: GatewayProcess): Promise<void> {
  gateway.child.kill("SIGKILL");
  await gateway.exited;
}

async function withStore<T>(paths: ProfilePaths, read: (store: Awaited<ReturnType<typeof openStore>>) => T) {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    return await read(store);
  } finally {
    await releaseStore(store);
  }
}

/** A gateway killed with SIGKILL while the model hangs on its first turn: that session and turn. */
async function killedMidTurn(sim: Simulator, paths: ProfilePaths, home: string) {
  const first = await startGateway(home);
  send(first, "a long question");
  await until(() => sim.requests().length === 1);
  await kill9(first);
  return withStore(paths, async (store) => {
    const session = (await store.listSessions())[0]?.id ?? "";
    return { session, turn: (await store.getTurns(session))[0]?.id ?? "" };
  });
}

/** Requests the model got that carry the resume note. */
const resumedRequests = (sim: Simulator) =>
  sim.requests().filter((r) => JSON.stringify(r.body).includes(RESUME_NOTE.slice(0, 60)));

describe("tenax gateway run: resume after a crash", () => {
  it("resumes a killed turn exactly once, keeps what was saved, and does not repeat a call in flight", async () => {
    // The log's folder is a working root: in the sandbox a command writes nothing else.
    const logs = tempDir();
    const { sim, paths, home } = await simProfile(
      "",
      `tools: { exec: { mode: full }, files: { roots: ["${logs}"] } }`,
    );
    const log = join(logs, "log.txt");
    // The tool appends, then takes long enough for the kill to find it in flight.
    sim.script([
      {
        type: "tool_calls",
        calls: [{ name: "terminal", arguments: { command: `echo ran >> ${log}; sleep 5` } }],
      },
      { type: "reply", text: "resumed and done" },
    ]);
    const first = await startGateway(home);
    send(first, "append to the log");
    await until(() => {
      try {
        return readFileSync(log, "utf8").includes("ran");
      } catch {
        return false;
      }
    });
    await kill9(first);
    const before = await withStore(paths, async (store) => {
      const [session] = await store.listSessions();
      return {
        session: session?.id ?? "",
        uids: (await store.getMessages(session?.id ?? "")).map((m) => m.uid),
        turn: (await store.getTurns(session?.id ?? ""))[0],
      };
    });
    expect(before.uids).toHaveLength(2); // the question and the call
    expect(before.turn?.status).toBe("running");

    const second = await startGateway(home);
    await untilAsync(async () => (await sessionRunning(second, before.session)) === false);
    expect(`${second.stdout()}${second.stderr()}`).toMatch(
      new RegExp(`turn ${before.turn?.id} of session ${before.session} was interrupted .* is resumed`),
    );
    // The event feed tells its clients too.
    expect(await feedEvent(second, "turn_resumed")).toMatchObject({
      layer: "lifecycle",
      session_id: before.session,
      data: { turn_id: before.turn?.id, interrupt_count: 1 },
    });
    await kill9(second);

    expect(sim.requests()).toHaveLength(2);
    expect(resumedRequests(sim)).toHaveLength(1);
    // The terminal call was in flight: it was not run again, so the log has one line.
    expect(readFileSync(log, "utf8")).toBe("ran\n");
    await withStore(paths, async (store) => {
      const messages = await store.getMessages(before.session);
      expect(messages.slice(0, before.uids.length).map((m) => m.uid)).toEqual(before.uids);
      expect(messages.find((m) => m.role === "tool")?.content).toMatch(/not run again/);
      expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "resumed and done" });
      expect(await store.getTurns(before.session)).toMatchObject([
        { id: before.turn?.id, status: "completed", interrupt_count: 1 },
      ]);
    });
  });

  it("suspends a turn killed three times and does not resume it on the fourth start", async () => {
    const { sim, paths, home } = await simProfile();
    sim.script([
      { type: "hang", phase: "before_headers" },
      { type: "hang", phase: "before_headers" },
      { type: "hang", phase: "before_headers" },
    ]);
    const first = await startGateway(home);
    send(first, "this one keeps crashing");
    await until(() => sim.requests().length === 1);
    await kill9(first);
    for (const seen of [2, 3]) {
      const again = await startGateway(home);
      await until(() => sim.requests().length === seen);
      await kill9(again);
    }
    expect(resumedRequests(sim)).toHaveLength(2);
    const fourth = await startGateway(home);
    const session = await withStore(paths, async (store) => (await store.listSessions())[0]?.id ?? "");
    await untilAsync(async () => (await sessionRunning(fourth, session)) === false);
    expect(`${fourth.stdout()}${fourth.stderr()}`).toMatch(
      /interrupted 3 times .* is suspended, not resumed again/,
    );
    expect(await feedEvent(fourth, "turn_suspended")).toMatchObject({
      session_id: session,
      data: { interrupt_count: 3 },
    });
    // Nothing was asked of the model on the fourth start.
    await new Promise((r) => setTimeout(r, 300));
    expect(sim.requests()).toHaveLength(3);
    // The user can go on in that session with a new message.
    const reply = await fourth.fetch(`/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": session },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "still there?" }] }),
    });
    expect(reply.status).toBe(200);
    await kill9(fourth);
    await withStore(paths, async (store) => {
      const turns = await store.getTurns(session);
      expect(turns[0]).toMatchObject({ status: "suspended", interrupt_count: 3 });
      expect(turns[1]).toMatchObject({ status: "completed", interrupt_count: 0 });
      expect(
        (await store.getMessages(session)).some((m) =>
          /^turn suspended: interrupted 3 times/.test(m.content ?? ""),
        ),
      ).toBe(true);
    });
  });

  it("with gateway.auto_resume off, reaps the killed turn and says it can be continued by hand", async () => {
    const { sim, paths, home } = await simProfile("auto_resume: false");
    sim.script([{ type: "hang", phase: "before_headers" }]);
    const first = await startGateway(home);
    send(first, "wait for me");
    await until(() => sim.requests().length === 1);
    await kill9(first);
    const second = await startGateway(home);
    await new Promise((r) => setTimeout(r, 300));
    await kill9(second);
    expect(sim.requests()).toHaveLength(1);
    expect(`${second.stdout()}${second.stderr()}`).toMatch(
      /1 interrupted turn\(s\) can be continued by sending a new message in their session \(gateway.auto_resume is off\)/,
    );
    await withStore(paths, async (store) => {
      const [session] = await store.listSessions();
      expect(await store.getTurns(session?.id ?? "")).toMatchObject([
        { status: "interrupted", interrupt_count: 1 },
      ]);
    });
  });

  it("resumes a killed turn that a `tenax chat` opened before the restart had already reaped", async () => {
    const { sim, paths, home } = await simProfile();
    sim.script([
      { type: "hang", phase: "before_headers" },
      { type: "reply", text: "hello from chat" },
      { type: "reply", text: "resumed after chat" },
    ]);
    const { session, turn } = await killedMidTurn(sim, paths, home);

    // The operator chats before the gateway is back: the chat reaps the gateway's dead turn.
    const chat = await tenaxAsync(home, ["chat", "-q", "hi"]);
    expect(chat.status).toBe(0);
    expect(chat.stderr).toContain(
      `turn ${turn} of session ${session} was left running by a process that stopped`,
    );
    await withStore(paths, async (store) => {
      expect(await store.getTurns(session)).toMatchObject([
        { id: turn, status: "interrupted", interrupt_count: 1 },
      ]);
    });

    const second = await startGateway(home);
    await untilAsync(
      async () => resumedRequests(sim).length === 1 && !(await sessionRunning(second, session)),
    );
    const output = `${second.stdout()}${second.stderr()}`;
    expect(output).toContain(`turn ${turn} of session ${session} was running in the gateway that stopped`);
    expect(output).toMatch(new RegExp(`turn ${turn} of session ${session} was interrupted .* is resumed`));
    await kill9(second);
    expect(sim.requests()).toHaveLength(3);
    await withStore(paths, async (store) => {
      expect(await store.getTurns(session)).toMatchObject([
        { id: turn, status: "completed", interrupt_count: 1 },
      ]);
      expect((await store.getMessages(session)).at(-1)).toMatchObject({
        role: "assistant",
        content: "resumed after chat",
      });
    });

    // Started once more, the gateway finds nothing of the earlier crash to resume.
    const third = await startGateway(home);
    await new Promise((r) => setTimeout(r, 300));
    await kill9(third);
    expect(sim.requests()).toHaveLength(3);
  });

  it("leaves a killed turn interrupted when its session went on in `tenax chat` before the restart", async () => {
    const { sim, paths, home } = await simProfile();
    sim.script([
      { type: "hang", phase: "before_headers" },
      { type: "reply", text: "went on in chat" },
    ]);
    const { session, turn } = await killedMidTurn(sim, paths, home);
    const chat = await tenaxAsync(home, ["chat", "--session", session, "-q", "never mind, something else"]);
    expect(chat.status).toBe(0);

    const second = await startGateway(home);
    await until(() => /session went on with a later turn/.test(`${second.stdout()}${second.stderr()}`));
    await new Promise((r) => setTimeout(r, 300));
    await kill9(second);
    expect(sim.requests()).toHaveLength(2);
    await withStore(paths, async (store) => {
      expect((await store.getTurns(session)).map((t) => [t.id === turn, t.status])).toEqual([
        [true, "interrupted"],
        [false, "completed"],
      ]);
      expect((await store.getMessages(session)).at(-1)).toMatchObject({
        role: "assistant",
        content: "went on in chat",
      });
    });
  });

  it("the watchdog resumes a turn a dead process left while the gateway runs", async () => {
    const { sim, paths, home } = await simProfile();
    appendFileSync(paths.config, "agent: { lease_seconds: 5 }\n");
    sim.script([{ type: "reply", text: "picked up" }]);
    const gateway = await startGateway(home);
    // Another process (now dead) had a turn running, with a lease that has long to go.
    const { session, turn } = await withStore(paths, async (store) => {
      const id = await store.createSession({ title: "orphaned" });
      const turnId = await store.startTurn(id, 600_000, `pid:${await deadPid()}`);
      await store.appendMessage({ session_id: id, role: "user", content: "left behind", turn_id: turnId });
      return { session: id, turn: turnId };
    });
    await until(() => sim.requests().length === 1, 10_000);
    await untilAsync(async () => (await sessionRunning(gateway, session)) === false);
    await kill9(gateway);
    await withStore(paths, async (store) => {
      expect(await store.getTurns(session)).toMatchObject([
        { id: turn, status: "completed", interrupt_count: 1 },
      ]);
      expect((await store.getMessages(session)).at(-1)).toMatchObject({
        role: "assistant",
        content: "picked up",
      });
    });
  });
});

async function sessionRunning(gw: GatewayProcess, session: string): Promise<boolean> {
  const response = await gw.fetch(`/api/sessions/${session}`);
  const body = (await response.json()) as { running?: boolean };
  return body.running === true;
}

async function untilAsync(what: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The first event of this type on GET /api/events (held events are replayed to a new client). */
async function feedEvent(gw: GatewayProcess, type: string): Promise<unknown> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 10_000);
  try {
    const response = await gw.fetch("/api/events", { signal: controller.signal });
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      text += decoder.decode(chunk, { stream: true });
      const match = new RegExp(`event: ${type}\ndata: (.*)\n`).exec(text);
      if (match) return JSON.parse(match[1] ?? "null");
    }
    throw new Error(`the feed ended without a ${type} event:\n${text}`);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
