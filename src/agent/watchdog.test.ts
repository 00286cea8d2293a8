// The watchdog's sweep over running turns while the gateway runs: a hung turn of this process is
// interrupted and reported once, a dead process's turn is reaped and resumed at once, and a live
// process's expired turn is only reported.
import { spawn } from "node:child_process";
import { realpathSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { cleanups, deadPid, host, setupAgent } from "../../test/helpers/resume.js";
import { identify, isRunning, type ProcessIdentity } from "./process-identity.js";
import { markEnv } from "./process-marks.js";
import type { ProcessReapReport } from "./process-reaper.js";
import type { LifecycleEvent } from "./resume.js";
import { sweep } from "./watchdog.js";

describe("the turn watchdog", () => {
  it("interrupts a hung turn of this process and reports it once", async () => {
    const { agent, store, session, project } = await setupAgent();
    const hung = await store.startTurn(session, -1); // its lease ran out: the heartbeat stopped
    const h = host((id) => id === session);
    const events: LifecycleEvent[] = [];
    const options = {
      agent,
      host: h,
      autoResume: true,
      cwd: project,
      onEvent: (e: LifecycleEvent) => events.push(e),
    };
    const seen = new Set<string>();
    await sweep(options, seen);
    await sweep(options, seen);
    expect(h.interrupted).toEqual([session, session]);
    expect(events).toMatchObject([{ type: "turn_stale", turn_id: hung, session_id: session }]);
    expect(events[0]?.message).toMatch(/hung worker/);
    expect(h.tracked).toEqual([]);
  });

  it("reaps and resumes at once a turn whose process died, and a row of ours nothing runs", async () => {
    const { agent, store, session, sim, project } = await setupAgent();
    const other = await agent.newSession();
    const dead = await store.startTurn(session, 60_000, `pid:${await deadPid()}`);
    await store.appendMessage({ session_id: session, role: "user", content: "first", turn_id: dead });
    const orphan = await store.startTurn(other, -1);
    await store.appendMessage({ session_id: other, role: "user", content: "second", turn_id: orphan });
    sim.script([
      { type: "reply", text: "done one" },
      { type: "reply", text: "done two" },
    ]);
    const h = host();
    const resumed: Promise<unknown>[] = [];
    await sweep({
      agent,
      host: h,
      autoResume: true,
      cwd: project,
      onResume: (r) => resumed.push(...r.resumed.map((t) => t.result)),
    });
    await Promise.all(resumed);
    expect(h.tracked.sort()).toEqual([session, other].sort());
    expect((await store.getTurns(session))[0]).toMatchObject({
      id: dead,
      status: "completed",
      interrupt_count: 1,
    });
    expect((await store.getTurns(other))[0]).toMatchObject({
      id: orphan,
      status: "completed",
      interrupt_count: 1,
    });
  });

  it("ends the commands a dead owner left running when it reaps that owner's turn", async () => {
    const { agent, store, session, sim, project, paths } = await setupAgent();
    const gone = await deadPid();
    const dead = await store.startTurn(session, 60_000, `pid:${gone}`);
    await store.appendMessage({ session_id: session, role: "user", content: "first", turn_id: dead });
    // What the dead chat's command left: it carries the chat's mark (owner pid and start time).
    const left = spawn("sleep", ["312"], {
      stdio: "ignore",
      env: { ...process.env, ...markEnv(realpathSync(paths.dir), { pid: gone, start: 1 }, dead) },
    });
    cleanups.push(async () => {
      left.kill("SIGKILL");
    });
    await new Promise((resolve) => left.once("spawn", resolve));
    const id = identify(left.pid as number) as ProcessIdentity;
    sim.script([{ type: "reply", text: "done" }]);
    const reports: ProcessReapReport[] = [];
    const resumed: Promise<unknown>[] = [];
    await sweep({
      agent,
      host: host(),
      autoResume: true,
      cwd: project,
      onProcesses: (r) => reports.push(r),
      onResume: (r) => resumed.push(...r.resumed.map((t) => t.result)),
    });
    await Promise.all(resumed);
    expect(reports).toMatchObject([
      { reaped: [{ pid: id.pid, task_id: dead, found: "mark" }], survived: [] },
    ]);
    expect(isRunning(id)).toBe(false);
  });

  it("leaves everything alone while the gateway stops", async () => {
    const { agent, store, session, project } = await setupAgent();
    const dead = await store.startTurn(session, -1, `pid:${await deadPid()}`);
    const h = { ...host(), isStopping: true };
    await sweep({ agent, host: h, autoResume: true, cwd: project });
    expect((await store.getTurns(session))[0]).toMatchObject({
      id: dead,
      status: "running",
      interrupt_count: 0,
    });
    expect(h.tracked).toEqual([]);
  });

  it("only reports an expired turn of another live process", async () => {
    const { agent, store, session, project } = await setupAgent();
    const sleeper = spawn("sleep", ["30"]);
    cleanups.push(async () => {
      sleeper.kill("SIGKILL");
    });
    const turn = await store.startTurn(session, -1, `pid:${sleeper.pid}`);
    const events: LifecycleEvent[] = [];
    const h = host();
    await sweep({ agent, host: h, autoResume: true, cwd: project, onEvent: (e) => events.push(e) });
    expect(events).toMatchObject([{ type: "turn_stale", turn_id: turn }]);
    expect(events[0]?.message).toMatch(/still runs; it is left to that process/);
    expect((await store.getTurns(session))[0]?.status).toBe("running");
    expect(h.tracked).toEqual([]);
  });
});
