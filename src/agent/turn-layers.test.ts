// The turn with its other layers switched on, over the real simulator, store, processes and git:
// an interrupt during a hung compression call, a compression failure the turn survives, and a
// write under checkpoints that a restore undoes without touching the project's own .git.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, tempProfile } from "../../test/helpers/tmp.js";
import { CheckpointStore } from "../checkpoints/store.js";
import { configSchema } from "../config/schema.js";
import { type Simulator, startSimulator } from "../llm/simulator/server.js";
import type { StorePort } from "../store/port.js";
import type { Agent, AgentEvent } from "./agent.js";
import { COMPONENT_KIND, COMPRESSION_COMPONENT_KEY } from "./compression-state.js";
import { pidAlive } from "./process-group.js";
import { openAgent } from "./setup.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const WINDOW = 8_000;

async function setup(options: { checkpoints?: boolean; threshold?: number } = {}) {
  const sim: Simulator = await startSimulator({
    models: { main: { context_window: WINDOW }, summarizer: { context_window: 100_000 } },
  });
  cleanups.push(() => sim.close());
  const paths = tempProfile();
  const config = configSchema.parse({
    model: { provider: "sim", name: "main" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        models: {
          main: { context_window: WINDOW, max_output_tokens: 500 },
          summarizer: { context_window: 100_000, max_output_tokens: 1_000 },
        },
      },
    },
    auxiliary: { compression: { provider: "sim", name: "summarizer", timeout: 60 } },
    compression: { threshold: options.threshold ?? 0.5 },
    retry: { max_attempts: 1 },
    checkpoints: { enabled: options.checkpoints === true },
  });
  const opened = await openAgent(paths, config, { storeSettings: { integrityCheckTimeoutMs: 0 } });
  cleanups.push(() => opened.close());
  const project = tempDir("tenax-project-");
  return { sim, paths, opened, agent: opened.agent, store: opened.store, project };
}

/** A session with some history: by default three exchanges of about 2,400 tokens in all, under the threshold. */
async function sessionWithHistory(store: StorePort, exchanges = 3, chars = 1_600): Promise<string> {
  const session = await store.createSession({ title: "long" });
  for (let i = 0; i < exchanges; i++) {
    await store.appendMessage({
      session_id: session,
      role: "user",
      content: `question ${i}: ${"q".repeat(chars)}`,
    });
    await store.appendMessage({
      session_id: session,
      role: "assistant",
      content: `answer ${i}: ${"a".repeat(chars)}`,
    });
  }
  return session;
}

/** One turn of the agent, with every event it emitted. */
async function turnWithEvents(agent: Agent, sessionId: string, text: string, cwd: string) {
  const events: AgentEvent[] = [];
  const result = await agent.turn({ sessionId, text, cwd, onEvent: (e) => events.push(e) });
  return { result, events };
}

describe("a turn with compression", () => {
  it("an interrupt during a hung compression call leaves no request open and no process alive", async () => {
    const { sim, agent, store, project } = await setup();
    const session = await sessionWithHistory(store);
    writeFileSync(join(project, "big.txt"), "b".repeat(12_000));
    sim.script([
      {
        type: "tool_calls",
        calls: [
          { name: "terminal", arguments: { command: "sleep 30", background: true } },
          { name: "read_file", arguments: { path: "big.txt" } },
        ],
      },
      // The summarizer never answers.
      { type: "hang", phase: "before_headers" },
    ]);
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const turn = agent.turn({
      sessionId: session,
      text: "look at big.txt",
      cwd: project,
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.type === "compression_started") setTimeout(() => controller.abort(), 100);
      },
    });
    const result = await turn;
    expect(result.status).toBe("interrupted");
    await sim.idle();
    const requests = sim.requests();
    expect(requests).toHaveLength(2);
    expect((requests[1]?.body as { model: string } | undefined)?.model).toBe("summarizer");
    expect(requests[1]?.ended).toBe("client_closed");
    // The background process the turn started is gone, and nothing else of it runs.
    const started = JSON.parse(
      (await store.getMessages(session)).find((m) => m.role === "tool")?.content ?? "{}",
    );
    expect(pidAlive(started.pid)).toBe(false);
    expect(agent.processes.liveCount()).toBe(0);
    await new Promise((r) => setTimeout(r, 150));
    expect(sim.requests()).toHaveLength(2);
    // An interrupt is not a summarizer failure: no cooldown.
    expect(await store.getRecord(COMPONENT_KIND, COMPRESSION_COMPONENT_KEY)).toBeNull();
  });

  it("a compression failure starts the cooldown and the turn still completes", async () => {
    const { sim, agent, store, project } = await setup();
    const session = await sessionWithHistory(store);
    writeFileSync(join(project, "big.txt"), "b".repeat(12_000));
    sim.script([
      { type: "tool_calls", calls: [{ name: "read_file", arguments: { path: "big.txt" } }] },
      { type: "error", status: 500, body: { error: { message: "summarizer broke", type: "server_error" } } },
      { type: "reply", text: "big.txt is all b." },
    ]);
    const { result, events } = await turnWithEvents(agent, session, "look at big.txt", project);
    expect(result).toMatchObject({ status: "completed", reply: "big.txt is all b." });
    const cooldown = await store.getRecord<{ failures: number; cooldown_until: number }>(
      COMPONENT_KIND,
      COMPRESSION_COMPONENT_KEY,
    );
    expect(cooldown?.failures).toBe(1);
    expect(cooldown?.cooldown_until).toBeGreaterThan(Date.now() + 30_000);
    expect(events.map((e) => e.type)).toContain("compression_failed");
    // Nothing was dropped: the request still fitted, so the model saw the whole history.
    const last = sim.requests()[2]?.body as { messages: Array<{ content: string }> } | undefined;
    expect(JSON.stringify(last?.messages)).toContain("question 1");
  });
});

describe("a turn past the compression threshold", () => {
  it("sends the model the compacted history, not the transcript read before compressing", async () => {
    // Six exchanges of about 4,800 tokens against a window of 8,000 at threshold 0.5: Tenax
    // compresses before the first model call of the turn.
    const { sim, agent, store, project } = await setup();
    const session = await sessionWithHistory(store, 6);
    sim.script([
      { type: "reply", text: "Summary: questions about q, answered with a." },
      { type: "reply", text: "final answer" },
    ]);
    const { result, events } = await turnWithEvents(agent, session, "and now?", project);
    expect(result).toMatchObject({ status: "completed", reply: "final answer" });
    expect(events.find((e) => e.type === "compression_started")).toMatchObject({ reason: "threshold" });
    const requests = sim.requests().map((r) => r.body as { model?: string; messages?: unknown });
    expect(requests.map((b) => b.model)).toEqual(["summarizer", "main"]);
    const sent = JSON.stringify(requests[1]?.messages);
    expect(sent).toContain("Summary: questions about q");
    // The middle the summary replaced is not sent again; the newest exchange still is.
    expect(sent).not.toContain("question 2:");
    expect(sent).toContain("question 5:");
  });
});

describe("a turn whose request the provider says is too long", () => {
  it("compresses once through the cooldown, then the same turn completes", async () => {
    // At threshold 1 Tenax itself never compresses first; the simulator, counting the tools too,
    // refuses the request as too long for its 8,000-token window.
    const { sim, agent, store, project } = await setup({ threshold: 1 });
    const session = await sessionWithHistory(store, 4, 3_700);
    const now = Date.now();
    await store.putRecord(COMPONENT_KIND, COMPRESSION_COMPONENT_KEY, {
      failures: 1,
      cooldown_until: now + 600_000,
      failed_at: now,
      last_error: "an earlier failure",
    });
    sim.script([
      { type: "reply", text: "Summary: four questions about q and their answers." },
      { type: "reply", text: "final answer" },
    ]);
    const { result, events } = await turnWithEvents(agent, session, "and now?", project);
    expect(result).toMatchObject({ status: "completed", reply: "final answer" });
    const requests = sim.requests();
    expect(requests.map((r) => [(r.body as { model?: string } | null)?.model, r.status])).toEqual([
      ["main", 400],
      ["summarizer", 200],
      ["main", 200],
    ]);
    const started = events.find((e) => e.type === "compression_started") as
      | { reason?: string; cooldown_bypassed?: boolean }
      | undefined;
    expect(started).toMatchObject({ reason: "overflow", cooldown_bypassed: true });
    expect(JSON.stringify((requests[2]?.body as { messages?: unknown } | null)?.messages)).toContain(
      "Summary: four questions",
    );
    // Every original message is still stored.
    expect((await store.getMessages(session)).filter((m) => m.role === "user")).toHaveLength(5);
  });
});

function digestTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else out[path.slice(dir.length)] = createHash("sha256").update(readFileSync(path)).digest("hex");
    }
  };
  walk(dir);
  return out;
}

describe("a turn with checkpoints", () => {
  it("write_file is preceded by one snapshot; a restore brings the old content back and .git is untouched", async () => {
    const { sim, agent, store, paths, project } = await setup({ checkpoints: true });
    writeFileSync(join(project, "app.txt"), "version 1\n");
    mkdirSync(join(project, "src"));
    writeFileSync(join(project, "src", "keep.txt"), "unchanged\n");
    execFileSync("git", ["init", "-q"], { cwd: project });
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "add", "."], { cwd: project });
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"], {
      cwd: project,
    });
    const gitBefore = digestTree(join(project, ".git"));

    const session = await store.createSession();
    sim.script([
      {
        type: "tool_calls",
        calls: [
          { name: "write_file", arguments: { path: "app.txt", content: "version 2\n" } },
          { name: "write_file", arguments: { path: "new.txt", content: "created by the agent\n" } },
        ],
      },
      { type: "reply", text: "updated" },
    ]);
    const { result, events } = await turnWithEvents(agent, session, "update app.txt", project);
    expect(result.status).toBe("completed");
    expect(readFileSync(join(project, "app.txt"), "utf8")).toBe("version 2\n");
    // One snapshot for the turn, taken before the first write.
    expect(events.filter((e) => e.type === "checkpoint")).toHaveLength(1);
    const checkpoints = new CheckpointStore({ home: paths.home });
    const [snapshot] = await checkpoints.list(project);
    expect(snapshot).toBeDefined();

    await checkpoints.restore(project, snapshot?.id ?? "");
    expect(readFileSync(join(project, "app.txt"), "utf8")).toBe("version 1\n");
    expect(() => statSync(join(project, "new.txt"))).toThrow();
    expect(readFileSync(join(project, "src", "keep.txt"), "utf8")).toBe("unchanged\n");
    expect(digestTree(join(project, ".git"))).toEqual(gitBefore);
  });
});
