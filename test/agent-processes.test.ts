// The task's processes never outlive it, even those that left its process groups: a command that
// runs `setsid sleep &` (its own session) or forks twice from a new session, in a turn or in a
// subagent's task, is ended when that task ends, on the machine and in the bubblewrap sandbox
// alike; what runs is recorded in the store meanwhile.
import { describe, expect, it } from "vitest";
import { PROCESS_KIND } from "../src/agent/process-ledger.js";
import { whichBwrap } from "../src/agent/sandbox/sandbox.js";
import { setupAgent } from "./helpers/agent.js";
import { markOf, processesOf, running, theProcess, watch } from "./helpers/procs.js";
import { waitUntil } from "./helpers/tool-context.js";

/** Where commands run: on the machine, and in the sandbox where bubblewrap is installed (CI). */
const SANDBOXES = whichBwrap(process.env.PATH) === null ? ["none"] : ["none", "bwrap"];

describe.each(SANDBOXES)("processes that leave their group (sandbox: %s)", (sandbox) => {
  const tools = { tools: { exec: { mode: "full", sandbox } } };

  it("are gone when the turn that started them ends", async () => {
    const { sim, agent, session, project, paths } = await setupAgent(tools);
    const profile = markOf(paths.dir);
    watch(["sleep", "302"], profile);
    watch(["sleep", "306"], profile);
    sim.script([
      {
        type: "tool_calls",
        calls: [
          {
            name: "terminal",
            arguments: { command: "setsid sleep 302 & setsid sh -c 'sleep 306 &'; echo started" },
          },
          // The turn goes on after the command returned: both must be alive then.
          { name: "terminal", arguments: { command: "echo next" } },
        ],
      },
      { type: "reply", text: "done" },
    ]);
    let seen: boolean[] = [];
    const result = await agent.turn({
      sessionId: session,
      text: "start them",
      cwd: project,
      onEvent: (event) => {
        if (event.type === "tool_finished" && seen.length === 0) {
          // The command returns when its shell exits, and a setsid child may not have become
          // `sleep` yet: look for up to 2.5 s, holding the turn here (this callback is
          // synchronous), so that what is seen is seen while the turn still runs.
          const alive = () =>
            [processesOf(["sleep", "302"], profile), processesOf(["sleep", "306"], profile)].map(
              (found) => found.length === 1,
            );
          const until = Date.now() + 2_500;
          seen = alive();
          while (seen.includes(false) && Date.now() < until) {
            Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
            seen = alive();
          }
        }
      },
    });
    expect(result.status).toBe("completed");
    expect(seen).toEqual([true, true]);
    expect(processesOf(["sleep", "302"], profile)).toEqual([]);
    expect(processesOf(["sleep", "306"], profile)).toEqual([]);
  });

  it("are gone when the subagent's task that started them ends, while the parent turn goes on", async () => {
    const { sim, agent, session, project, paths } = await setupAgent(tools);
    const profile = markOf(paths.dir);
    watch(["sleep", "305"], profile);
    sim.script([
      { type: "tool_calls", calls: [{ name: "delegate_task", arguments: { task: "start the sleeper" } }] },
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "setsid sleep 305 &" } }] },
      // Slow, so the subagent (and its escapee) is still there when the test looks.
      { type: "reply", text: "started it", chunk_size: 1, chunk_delay_ms: 300 },
      { type: "hang", phase: "before_headers" },
    ]);
    const stop = new AbortController();
    const turn = agent.turn({ sessionId: session, text: "delegate", cwd: project, signal: stop.signal });
    await waitUntil(() => sim.requests().length === 3, 20_000, "the subagent's reply");
    // While the subagent runs, its escaped process lives (it is found by its mark). In the sandbox
    // the command returns as soon as its shell exits, so the sleeper may still be on its way to
    // exec: it has until the subagent's slow reply (3 s) ends to show up.
    await waitUntil(() => processesOf(["sleep", "305"], profile).length === 1, 2_500, "the escaped sleeper");
    const sleeper = theProcess(["sleep", "305"], profile);
    await waitUntil(() => sim.requests().length === 4, 20_000, "the parent's next model call");
    expect(running(sleeper)).toBe(false);
    stop.abort();
    expect((await turn).status).toBe("interrupted");
  });
});

describe("processes a task runs", () => {
  it("records what runs in the store, with pid and start time, and removes it once reaped", async () => {
    const { sim, agent, session, project, store, paths } = await setupAgent();
    const profile = markOf(paths.dir);
    watch(["sleep", "310"], profile);
    sim.script([
      {
        type: "tool_calls",
        calls: [{ name: "terminal", arguments: { command: "exec sleep 310", background: true } }],
      },
      { type: "hang", phase: "before_headers" },
    ]);
    const stop = new AbortController();
    const turn = agent.turn({ sessionId: session, text: "go", cwd: project, signal: stop.signal });
    await waitUntil(() => sim.requests().length === 2, 20_000, "the model call after the command");
    const sleeper = theProcess(["sleep", "310"], profile);
    const records = await store.listRecords<{ owner: { pid: number }; processes: unknown[] }>(PROCESS_KIND);
    expect(records).toHaveLength(1);
    expect(records[0]?.value.owner.pid).toBe(process.pid);
    expect(records[0]?.value.processes).toEqual([
      expect.objectContaining({ pid: sleeper.pid, start: sleeper.start, command: "exec sleep 310" }),
    ]);
    stop.abort();
    await turn;
    expect(running(sleeper)).toBe(false);
    expect(await store.listRecords(PROCESS_KIND)).toEqual([]);
  });
});
