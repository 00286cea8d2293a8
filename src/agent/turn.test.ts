// The turn loop against the simulator over real HTTP, with the real store, real tools and real
// child processes: the tool loop, persistence before publish, guardrails, interrupts,
// continuations, failures and subagents.
import { existsSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { setupAgent } from "../../test/helpers/agent.js";
import { tempDir, tempProfile } from "../../test/helpers/tmp.js";
import { configSchema } from "../config/schema.js";
import { startSimulator } from "../llm/simulator/server.js";
import type { SimStep } from "../llm/simulator/steps.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { Agent, type AgentEvent } from "./agent.js";
import { pidAlive } from "./process-group.js";
import { cutByOutputLimit } from "./turn.js";

const call = (name: string, args: Record<string, unknown>, id?: string) => ({
  name,
  arguments: args,
  ...(id ? { id } : {}),
});

async function roles(store: Store, session: string): Promise<string[]> {
  return (await store.getMessages(session)).map((m) => m.role);
}

// A killed grandchild may linger as a zombie where nothing reaps orphans: that is not alive.
const alive = pidAlive;

describe("the turn loop", () => {
  it("a turn that fails unexpectedly says so without the profile's secrets in its words", async () => {
    const secret = "zq8Hk2pLm4Rt7Vw9-unexpected";
    const { store, session, project, paths, sim } = await setupAgent();
    const config = configSchema.parse({
      model: { provider: "sim", name: "echo" },
      providers: { sim: { type: "simulator", base_url: sim.url, api_keys: [secret] } },
    });
    const agent = await Agent.create({ paths, config, store });
    try {
      // A route that throws what no layer classified, quoting the key (a bug's message would).
      const route = {
        complete: () => Promise.reject(new Error(`request to ${sim.url} with key ${secret} blew up`)),
      } as unknown as Parameters<Agent["turn"]>[0]["route"];
      const result = await agent.turn({
        sessionId: session,
        text: "go",
        cwd: project,
        ...(route ? { route } : {}),
      });
      expect(result.status).toBe("failed");
      expect(result.failure?.code).toBe("turn_failed");
      expect(result.failure?.message).toContain("[redacted:providers.sim.api_keys[0]]");
      expect(JSON.stringify(result)).not.toContain(secret);
      expect(JSON.stringify(await store.getMessages(session))).not.toContain(secret);
    } finally {
      await agent.close();
    }
  });

  it("runs a full tool loop, committing each message as it completes", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([
      {
        type: "tool_calls",
        calls: [call("write_file", { path: "notes.txt", content: "hello from the agent\n" })],
      },
      { type: "tool_calls", calls: [call("read_file", { path: "notes.txt" })] },
      { type: "reply", text: "I wrote notes.txt." },
    ]);
    const events: AgentEvent[] = [];
    const result = await agent.turn({
      sessionId: session,
      text: "write a note",
      cwd: project,
      onEvent: (e) => events.push(e),
    });
    expect(result).toMatchObject({
      status: "completed",
      reply: "I wrote notes.txt.",
      partial: false,
      finish_reason: "stop",
      iterations: 3,
    });
    expect(readFileSync(join(project, "notes.txt"), "utf8")).toBe("hello from the agent\n");
    expect(await roles(store, session)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    // The tool result reached the model on the next request.
    const third = sim.requests()[2]?.body as { messages: Array<{ role: string; content: string }> };
    expect(third.messages.at(-1)?.content).toContain("hello from the agent");
    expect(third.messages[0]?.role).toBe("system");
    // The user's message was committed before the first provider request arrived.
    const user = (await store.getMessages(session))[0];
    expect(user?.created_at).toBeLessThanOrEqual(sim.requests()[0]?.received_at ?? 0);
    const turn = (await store.getTurns(session))[0];
    expect(turn).toMatchObject({ status: "completed", lease_expires_at: null, error: null });
    expect(events.filter((e) => e.type === "tool_finished").map((e) => (e as { ok: boolean }).ok)).toEqual([
      true,
      true,
    ]);
  });

  it("tells nothing of a turn whose start cannot be made durable, runs no tool, and throws the store's error", async () => {
    const paths = tempProfile();
    const sim = await startSimulator();
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    const config = configSchema.parse({
      model: { provider: "sim", name: "echo" },
      providers: { sim: { type: "simulator", base_url: sim.url, api_keys: ["sk-test"] } },
      retry: { max_attempts: 1 },
    });
    const agent = await Agent.create({ paths, config, store });
    try {
      sim.script([
        { type: "tool_calls", calls: [call("write_file", { path: "never.txt", content: "no\n" })] },
      ]);
      // The WAL vanishes before the store's first sync: the turn's first write (a new session, as
      // the gateway makes it) commits, and its sync cannot even open the file.
      unlinkSync(`${paths.state}-wal`);
      const project = tempDir("tenax-project-");
      const { id, op } = agent.newSessionOp({ source: "gateway" });
      const events: AgentEvent[] = [];
      const failed = await agent
        .turn({ sessionId: id, text: "write it", cwd: project, before: [op], onEvent: (e) => events.push(e) })
        .catch((e: unknown) => e);
      expect(failed).toMatchObject({ code: "store_io" });
      expect(events).toEqual([]);
      expect(existsSync(join(project, "never.txt"))).toBe(false);
      expect(store.health().disk_failure).not.toBeNull();
    } finally {
      await agent.close();
      await releaseStore(store);
      await sim.close();
    }
  });

  it("a tool that throws becomes a JSON error result, and the turn goes on", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([
      { type: "tool_calls", calls: [call("read_file", { path: "missing.txt" }), call("no_such_tool", {})] },
      { type: "reply", text: "That file does not exist." },
    ]);
    const result = await agent.turn({ sessionId: session, text: "read it", cwd: project });
    expect(result.status).toBe("completed");
    const tools = (await store.getMessages(session)).filter((m) => m.role === "tool");
    expect(JSON.parse(tools[0]?.content ?? "{}").error).toMatch(/missing\.txt/);
    expect(JSON.parse(tools[1]?.content ?? "{}").error).toMatch(/there is no tool named no_such_tool/);
  });

  it("halts on the same call with the same result several times in a row", async () => {
    const { sim, store, agent, session, project } = await setupAgent({ agent: { identical_call_limit: 3 } });
    const same: SimStep = {
      type: "tool_calls",
      calls: [call("search_files", { pattern: "needle", path: "." })],
    };
    sim.script([same, same, same, same, same]);
    const result = await agent.turn({ sessionId: session, text: "find it", cwd: project });
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/3 times in a row/);
    expect(sim.requests()).toHaveLength(3);
    const last = (await store.getMessages(session)).at(-1);
    expect(last).toMatchObject({ role: "marker" });
    expect(last?.content).toMatch(
      /turn failed: the guardrails halted the turn: stopped: search_files was called 3 times/,
    );
  });

  it("an interrupt during a tool stops the command, leaves no process, and sends nothing more", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([
      {
        type: "tool_calls",
        calls: [call("terminal", { command: "echo $$ > pid.txt; sleep 30 & echo $! > child.txt; wait" })],
      },
      { type: "reply", text: "never sent" },
    ]);
    const controller = new AbortController();
    const turn = agent.turn({ sessionId: session, text: "run it", cwd: project, signal: controller.signal });
    const deadline = Date.now() + 5000;
    while (!existsSync(join(project, "child.txt")) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    const result = await turn;
    expect(result.status).toBe("interrupted");
    const pids = ["pid.txt", "child.txt"].map((f) => Number(readFileSync(join(project, f), "utf8").trim()));
    for (const pid of pids) expect(alive(pid)).toBe(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(sim.requests()).toHaveLength(1);
    expect(agent.processes.liveCount()).toBe(0);
    expect((await store.getTurns(session))[0]?.status).toBe("interrupted");
    expect((await store.getMessages(session)).at(-1)?.content).toMatch(/^turn interrupted: /);
  });

  it("background processes of a task are cleaned up when it ends; a sibling task's survive", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    const sibling = await agent.processes.start("sleep 30", { cwd: project, taskId: "sibling-task" });
    sim.script([
      { type: "tool_calls", calls: [call("terminal", { command: "sleep 30", background: true })] },
      { type: "reply", text: "started it" },
    ]);
    const result = await agent.turn({ sessionId: session, text: "start a server", cwd: project });
    expect(result.status).toBe("completed");
    const started = JSON.parse(
      (await store.getMessages(session)).find((m) => m.role === "tool")?.content ?? "{}",
    );
    expect(started).toMatchObject({ background: true, pid: expect.any(Number) });
    expect(alive(started.pid)).toBe(false);
    expect(agent.processes.list().map((p) => p.id)).toEqual([sibling.id]);
    expect(agent.processes.alive(sibling.id)).toBe(true);
    expect(agent.processes.liveCount()).toBe(1);
    await agent.processes.cleanupTask("sibling-task");
    expect(agent.processes.liveCount()).toBe(0);
  });

  it("continues a reply cut by the output limit a bounded number of times, then marks it partial", async () => {
    const { sim, store, agent, session, project } = await setupAgent({ agent: { max_continuations: 2 } });
    const cut = (text: string): SimStep => ({ type: "reply", text, finish_reason: "length" });
    sim.script([cut("part one, "), cut("part two, "), cut("part three")]);
    const result = await agent.turn({ sessionId: session, text: "write a lot", cwd: project });
    expect(result).toMatchObject({ status: "completed", partial: true, finish_reason: "length" });
    expect(result.reply).toBe("part one, part two, part three");
    expect(sim.requests()).toHaveLength(3);
    const nudges = (await store.getMessages(session)).filter((m) => m.name === "tenax-continue");
    expect(nudges).toHaveLength(2);
  });

  it("counts Anthropic's max_tokens as a reply the output limit cut, like OpenAI's length", () => {
    expect(
      ["length", "max_tokens", "stop", "end_turn", "tool_calls", "content_filter", null].map(
        cutByOutputLimit,
      ),
    ).toEqual([true, true, false, false, false, false, false]);
  });

  it("a provider failure fails the turn with the layer that gave up, and the transcript says so", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([
      {
        type: "error",
        status: 400,
        body: { error: { message: "Unknown parameter: 'x'", type: "invalid_request_error" } },
      },
    ]);
    const result = await agent.turn({ sessionId: session, text: "hi", cwd: project });
    expect(result.status).toBe("failed");
    expect(result.error).toMatch(/^the provider sim\/echo failed .*invalid_request/);
    expect(result.failure).toMatchObject({
      code: "invalid_request",
      layer: "provider",
      target: { provider: "sim", model: "echo" },
      classified: { reason: "invalid_request", status: 400 },
    });
    expect(await roles(store, session)).toEqual(["user", "marker"]);
    expect((await store.getTurns(session))[0]).toMatchObject({ status: "failed" });
  });

  it("delegate_task runs a subagent in its own linked session and returns its answer", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([
      { type: "tool_calls", calls: [call("delegate_task", { task: "count to three", title: "counting" })] },
      { type: "reply", text: "one two three" },
      { type: "reply", text: "The subagent counted: one two three." },
    ]);
    const result = await agent.turn({ sessionId: session, text: "delegate", cwd: project });
    expect(result.reply).toBe("The subagent counted: one two three.");
    const child = (await store.listSessions()).find((s) => s.parent_session_id === session);
    expect(child).toMatchObject({ title: "counting", source: "subagent" });
    expect((await store.getMessages(child?.id ?? "")).map((m) => m.content)).toEqual([
      "count to three",
      "one two three",
    ]);
    const toolResult = JSON.parse(
      (await store.getMessages(session)).find((m) => m.role === "tool")?.content ?? "{}",
    );
    expect(toolResult).toMatchObject({ session_id: child?.id, status: "completed", reply: "one two three" });
  });

  it("an interrupt reaches a subagent: its model call is closed and both turns end interrupted", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([
      { type: "tool_calls", calls: [call("delegate_task", { task: "think for a long time" })] },
      { type: "hang", phase: "before_headers" },
    ]);
    const controller = new AbortController();
    const turn = agent.turn({
      sessionId: session,
      text: "delegate",
      cwd: project,
      signal: controller.signal,
    });
    const deadline = Date.now() + 5000;
    while (sim.requests().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    const result = await turn;
    expect(result.status).toBe("interrupted");
    await sim.idle();
    expect(sim.requests()[1]?.ended).toBe("client_closed");
    const child = (await store.listSessions()).find((s) => s.parent_session_id === session);
    expect((await store.getTurns(child?.id ?? ""))[0]?.status).toBe("interrupted");
    await new Promise((r) => setTimeout(r, 100));
    expect(sim.requests()).toHaveLength(2);
  });
});
