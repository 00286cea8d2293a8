// What a turn costs the disk, counted on a real store whose WAL syncs are counted: a turn its
// caller acknowledges by its answer (a chat completion not streamed) makes one sync, its end's,
// which carries the answer, the caller's end writes and the turn's row; a turn told of at its
// start makes its question durable first, one sync more; a tool never runs before the start is
// durable.
import { closeSync, fdatasync, fdatasyncSync, openSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, tempProfile } from "../../test/helpers/tmp.js";
import { configSchema } from "../config/schema.js";
import { type Simulator, startSimulator } from "../llm/simulator/server.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { Agent } from "./agent.js";

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function countedAgent() {
  const sim: Simulator = await startSimulator();
  closing.push(() => sim.close());
  const paths = tempProfile();
  const counts = { syncs: 0 };
  const store: Store = await openStore(paths, {
    integrityCheckTimeoutMs: 0,
    walFiles: {
      openSync: (path, flags) => openSync(path, flags),
      fdatasync: (fd, done) => {
        counts.syncs++;
        fdatasync(fd, done);
      },
      fdatasyncSync: (fd) => fdatasyncSync(fd),
      closeSync: (fd) => closeSync(fd),
    },
  });
  closing.push(() => releaseStore(store));
  // The search queue's own commits would hold a sync's waiters for one more (see WalSync).
  store.index.stop();
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: { sim: { type: "simulator", base_url: sim.url, api_keys: ["sk-test"] } },
    retry: { max_attempts: 1 },
    tools: { exec: { mode: "full", sandbox: "none" } },
  });
  const agent = await Agent.create({ paths, config, store });
  closing.push(() => agent.close());
  const session = await agent.newSession();
  return { sim, store, agent, session, counts, cwd: tempDir("tenax-project-") };
}

describe("a turn's commits and syncs", () => {
  it("acknowledged by its answer: one sync for the whole turn, the end writes in its commit", async () => {
    const { store, agent, session, counts, cwd } = await countedAgent();
    counts.syncs = 0;
    const result = await agent.turn({
      sessionId: session,
      text: "hello",
      cwd,
      acknowledgedBy: "answer",
      endWrites: async (reply) => [
        { op: "session.update", id: session, conversation_hash: `after:${reply}`, updated_at: Date.now() },
      ],
    });
    expect(result).toMatchObject({ status: "completed", reply: "echo: hello" });
    expect(counts.syncs).toBe(1);
    expect((await store.getMessages(session)).map((m) => [m.role, m.content])).toEqual([
      ["user", "hello"],
      ["assistant", "echo: hello"],
    ]);
    expect(await store.conversationHash(session)).toBe("after:echo: hello");
    expect((await store.getSession(session))?.last_turn).toMatchObject({ status: "completed" });
  });

  it("told of at its start: its question is durable first, then its end: two syncs", async () => {
    const { agent, session, counts, cwd } = await countedAgent();
    counts.syncs = 0;
    let syncsWhenTold = -1;
    const result = await agent.turn({
      sessionId: session,
      text: "hello",
      cwd,
      onEvent: (e) => {
        if (e.type === "turn_started") syncsWhenTold = counts.syncs;
      },
    });
    expect(result.status).toBe("completed");
    expect(syncsWhenTold).toBe(1);
    expect(counts.syncs).toBe(2);
  });

  it("acknowledged by its answer, a tool runs only once the start is durable", async () => {
    const { sim, store, agent, session, counts, cwd } = await countedAgent();
    sim.script([
      { type: "tool_calls", calls: [{ name: "write_file", arguments: { path: "a.txt", content: "x" } }] },
      { type: "reply", text: "done" },
    ]);
    counts.syncs = 0;
    let syncsAtTool = -1;
    const result = await agent.turn({
      sessionId: session,
      text: "write",
      cwd,
      acknowledgedBy: "answer",
      onEvent: (e) => {
        if (e.type === "tool_started") syncsAtTool = counts.syncs;
      },
    });
    expect(result).toMatchObject({ status: "completed", reply: "done" });
    // The call's message is committed and synced before the tool starts, the start with it.
    expect(syncsAtTool).toBe(1);
    expect((await store.getMessages(session)).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
  });
});
