// Resuming turns a crash interrupted, in-process: the real store on a temp file, the real tools,
// the simulator over real HTTP. A "crash" is a turn row left running by a process that is gone,
// with whatever it had saved; the reaper and resumeInterrupted take it from there.
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cleanups, deadPid, host, setupAgent as setup } from "../../test/helpers/resume.js";
import type { Simulator } from "../llm/simulator/server.js";
import type { Store } from "../store/store.js";
import { MARKER_ROLE, RESUME_NAME, UNANSWERED_NOTE } from "./history.js";
import { type LifecycleEvent, resumeInterrupted } from "./resume.js";
import type { TurnResult } from "./turn.js";
import { RESUME_NOTE } from "./turn-resume.js";

/** What a process killed mid-turn leaves: a running turn of a dead owner and what it had saved. */
async function crashedTurn(
  store: Store,
  session: string,
  saved: (turnId: string) => Promise<void>,
  interrupts = 0,
): Promise<string> {
  const turnId = await store.startTurn(session, 60_000, `pid:${await deadPid()}`);
  if (interrupts > 0) await store.updateTurn({ id: turnId, interrupt_count: interrupts });
  await saved(turnId);
  return turnId;
}

function lastRequestMessages(
  sim: Simulator,
): Array<{ role: string; content: unknown; tool_call_id?: string }> {
  const body = sim.requests().at(-1)?.body as { messages: Array<{ role: string; content: unknown }> };
  return body.messages;
}

describe("resuming an interrupted turn", () => {
  it("goes on from the last saved message with a note, under the same turn id", async () => {
    const { sim, store, agent, session, project } = await setup();
    const turnId = await crashedTurn(store, session, async (turn_id) => {
      await store.appendMessage({ session_id: session, role: "user", content: "count to three", turn_id });
    });
    sim.script([{ type: "reply", text: "one, two, three" }]);
    // The owner is dead, so the turn is reaped at once although its lease has a minute left.
    const reaped = await agent.reap();
    expect(reaped).toEqual([{ turn_id: turnId, session_id: session, interrupt_count: 1 }]);
    const events: LifecycleEvent[] = [];
    const h = host();
    const report = await resumeInterrupted({
      agent,
      reaped,
      autoResume: true,
      host: h,
      cwd: project,
      onEvent: (e) => events.push(e),
    });
    expect(report.resumed.map((r) => r.turn_id)).toEqual([turnId]);
    const result = (await report.resumed[0]?.result) as TurnResult;
    expect(result).toMatchObject({ turn_id: turnId, status: "completed", reply: "one, two, three" });
    expect(await store.getTurns(session)).toMatchObject([
      { id: turnId, status: "completed", interrupt_count: 1, lease_owner: null, error: null },
    ]);
    expect(events).toMatchObject([
      { type: "turn_resumed", layer: "lifecycle", turn_id: turnId, interrupt_count: 1 },
    ]);
    // The model saw the question and the note, and no "unanswered" stand-in for the crash.
    expect(sim.requests()).toHaveLength(1);
    const sent = lastRequestMessages(sim);
    const user = sent.filter((m) => m.role === "user").map((m) => String(m.content));
    expect(user).toHaveLength(1);
    expect(user[0]).toContain("count to three");
    expect(user[0]).toContain(RESUME_NOTE);
    expect(JSON.stringify(sent)).not.toContain(UNANSWERED_NOTE);
    expect(JSON.stringify(sent)).not.toContain("the process running it stopped (last heartbeat");
    const stored = await store.getMessages(session);
    expect(stored.map((m) => m.role)).toEqual(["user", MARKER_ROLE, "user", "assistant"]);
    expect(stored[2]).toMatchObject({ name: RESUME_NAME, turn_id: turnId });
  });

  it("reports a turn another resume took over first as skipped, never as resumed twice", async () => {
    const { sim, store, agent, session, project } = await setup();
    const turnId = await crashedTurn(store, session, async (turn_id) => {
      await store.appendMessage({ session_id: session, role: "user", content: "once", turn_id });
    });
    sim.script([{ type: "reply", text: "answered once" }]);
    const reaped = await agent.reap();
    const events: LifecycleEvent[] = [];
    // Two watchdogs (here: two hosts of one agent) resume the same reaped turn at once.
    const reports = await Promise.all(
      [host(), host()].map((h) =>
        resumeInterrupted({
          agent,
          reaped,
          autoResume: true,
          host: h,
          cwd: project,
          onEvent: (e) => events.push(e),
        }),
      ),
    );
    const resumed = reports.flatMap((r) => r.resumed);
    const skipped = reports.flatMap((r) => r.skipped);
    expect(resumed.map((r) => r.turn_id)).toEqual([turnId]);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]?.reason).toMatch(/another process took it over first|it is running now/);
    expect(events.filter((e) => e.type === "turn_resumed")).toHaveLength(1);
    expect(await resumed[0]?.result).toMatchObject({ status: "completed", reply: "answered once" });
    expect(sim.requests()).toHaveLength(1);
  });

  it("does not run an in-flight call again unless it is read-only", async () => {
    const { sim, store, agent, session, project } = await setup();
    const log = join(project, "log.txt");
    const turnId = await crashedTurn(store, session, async (turn_id) => {
      await store.appendMessage({ session_id: session, role: "user", content: "log and read", turn_id });
      await store.appendMessage({
        session_id: session,
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c_append", name: "terminal", arguments: JSON.stringify({ command: "echo ran >> log.txt" }) },
          { id: "c_read", name: "read_file", arguments: JSON.stringify({ path: "log.txt" }) },
        ],
        turn_id,
      });
      // The append ran before the process died; its result was never saved.
      appendFileSync(log, "ran\n");
    });
    sim.script([{ type: "reply", text: "checked" }]);
    const report = await resumeInterrupted({
      agent,
      reaped: await agent.reap(),
      autoResume: true,
      host: host(),
      cwd: project,
    });
    expect((await report.resumed[0]?.result)?.status).toBe("completed");
    // The side effect happened exactly once.
    expect(readFileSync(log, "utf8")).toBe("ran\n");
    const tools = (await store.getMessages(session)).filter((m) => m.role === "tool");
    expect(tools.map((m) => m.tool_call_id)).toEqual(["c_append", "c_read"]);
    expect(tools[0]?.content).toMatch(/not run again: this terminal call was in flight/);
    expect(tools[1]?.content).toContain("ran");
    expect(tools[1]?.content).not.toMatch(/not run again/);
    expect(tools.every((m) => m.turn_id === turnId)).toBe(true);
    // The model got both results, then the note, in an order every provider accepts.
    expect(lastRequestMessages(sim).map((m) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "tool",
      "user",
    ]);
  });

  it("suspends a turn at its third interruption and never resumes it", async () => {
    const { sim, store, agent, session, project } = await setup();
    const turnId = await crashedTurn(
      store,
      session,
      async (turn_id) => {
        await store.appendMessage({ session_id: session, role: "user", content: "crash me", turn_id });
      },
      2,
    );
    const h = host();
    const events: LifecycleEvent[] = [];
    const reaped = await agent.reap();
    expect(reaped).toMatchObject([{ turn_id: turnId, interrupt_count: 3 }]);
    const report = await resumeInterrupted({
      agent,
      reaped,
      autoResume: true,
      host: h,
      cwd: project,
      onEvent: (e) => events.push(e),
    });
    expect(report).toMatchObject({ resumed: [], suspended: [{ turn_id: turnId, interrupt_count: 3 }] });
    expect(h.tracked).toEqual([]);
    expect(sim.requests()).toHaveLength(0);
    expect((await store.getTurns(session))[0]).toMatchObject({ status: "suspended", interrupt_count: 3 });
    const note = (await store.getMessages(session)).at(-1);
    expect(note?.role).toBe(MARKER_ROLE);
    expect(note?.content).toMatch(/interrupted 3 times/);
    expect(note?.content).toMatch(/send a new message in this session/);
    expect(events.map((e) => e.type)).toEqual(["turn_suspended"]);
    // A later start finds nothing to do with it.
    expect(await agent.reap()).toEqual([]);
    // The user goes on with a new message: the question left behind is shown as unanswered.
    sim.script([{ type: "reply", text: "here now" }]);
    const next = await agent.turn({ sessionId: session, text: "are you there?", cwd: project });
    expect(next.status).toBe("completed");
    expect(lastRequestMessages(sim).map((m) => m.role)).toEqual(["system", "user", "assistant", "user"]);
    expect(lastRequestMessages(sim)[2]?.content).toBe(UNANSWERED_NOTE);
  });

  it("with auto_resume off only reaps, and says why nothing was resumed", async () => {
    const { sim, store, agent, session, project } = await setup();
    const turnId = await crashedTurn(store, session, async (turn_id) => {
      await store.appendMessage({ session_id: session, role: "user", content: "wait", turn_id });
    });
    const h = host();
    const report = await resumeInterrupted({
      agent,
      reaped: await agent.reap(),
      autoResume: false,
      host: h,
      cwd: project,
    });
    expect(report.skipped).toMatchObject([{ turn_id: turnId, reason: "gateway.auto_resume is off" }]);
    expect(h.tracked).toEqual([]);
    expect(sim.requests()).toHaveLength(0);
    expect((await store.getTurns(session))[0]).toMatchObject({ status: "interrupted", interrupt_count: 1 });
  });

  it("closes a turn whose reply was saved before the stop without asking the model again", async () => {
    const { sim, store, agent, session, project } = await setup();
    const turnId = await crashedTurn(store, session, async (turn_id) => {
      await store.appendMessage({ session_id: session, role: "user", content: "hi", turn_id });
      await store.appendMessage({ session_id: session, role: "assistant", content: "hello", turn_id });
    });
    const report = await resumeInterrupted({
      agent,
      reaped: await agent.reap(),
      autoResume: true,
      host: host(),
      cwd: project,
    });
    expect(report.skipped).toMatchObject([
      { turn_id: turnId, reason: expect.stringMatching(/reply was saved/) },
    ]);
    expect(sim.requests()).toHaveLength(0);
    expect((await store.getTurns(session))[0]).toMatchObject({ status: "completed", interrupt_count: 1 });
  });

  it("reaps a live owner's turn only once its lease has expired", async () => {
    const { store, agent, session } = await setup();
    const sleeper = spawn("sleep", ["30"]);
    cleanups.push(async () => {
      sleeper.kill("SIGKILL");
    });
    const live = await store.startTurn(session, 60_000, `pid:${sleeper.pid}`);
    expect(await agent.reap()).toEqual([]);
    await store.updateTurn({ id: live, lease_expires_at: Date.now() - 1 });
    expect((await agent.reap()).map((r) => r.turn_id)).toEqual([live]);
  });
});
