// What a turn asks of the disk, on a real store: a turn its caller acknowledges by its answer (a
// chat completion not streamed) makes one synced commit, its end's, which carries the answer, the
// caller's end writes and the turn's row, and its start waits for that sync; a turn told of at its
// start makes its question durable first, one synced commit more; a tool never runs before the
// start is durable. The turn's writes are counted as the store is asked for them (the process's
// other writers, such as the provider health records, commit on their own timers), and that a
// write made with durableWithNext asks for no sync of its own is src/store/wal-sync.test.ts's.
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, tempProfile } from "../../test/helpers/tmp.js";
import { configSchema } from "../config/schema.js";
import { type Simulator, startSimulator } from "../llm/simulator/server.js";
import type { ApplyOptions, WriteOp } from "../store/ops.js";
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
  const store: Store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  closing.push(() => releaseStore(store));
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: { sim: { type: "simulator", base_url: sim.url, api_keys: ["sk-test"] } },
    retry: { max_attempts: 1 },
    tools: { exec: { mode: "full", sandbox: "none" } },
  });
  const agent = await Agent.create({ paths, config, store });
  closing.push(() => agent.close());
  const session = await agent.newSession();
  // The session's writes as the store is asked for them: synced, or durable with the next sync.
  const counts = { syncs: 0, lazy: 0 };
  const ofSession = (ops: readonly WriteOp[]) =>
    ops.some((op) => ("session_id" in op && op.session_id === session) || op.op === "turn.update");
  const count = (ops: readonly WriteOp[], options?: ApplyOptions) => {
    if (!ofSession(ops)) return;
    if (options?.durableWithNext === true) counts.lazy++;
    else counts.syncs++;
  };
  const write = store.write.bind(store);
  const writeStaged = store.writeStaged.bind(store);
  store.write = (ops, options) => {
    count(ops, options);
    return write(ops, options);
  };
  store.writeStaged = (ops, options) => {
    count(ops, options);
    return writeStaged(ops, options);
  };
  closing.push(async () => {
    store.write = write;
    store.writeStaged = writeStaged;
  });
  return { sim, store, agent, session, counts, cwd: tempDir("tenax-project-") };
}

describe("a turn's commits and syncs", () => {
  it("acknowledged by its answer: one sync for the whole turn, the end writes in its commit", async () => {
    const { store, agent, session, counts, cwd } = await countedAgent();
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
    expect(counts).toEqual({ syncs: 1, lazy: 1 });
    expect((await store.getMessages(session)).map((m) => [m.role, m.content])).toEqual([
      ["user", "hello"],
      ["assistant", "echo: hello"],
    ]);
    expect(await store.conversationHash(session)).toBe("after:echo: hello");
    expect((await store.getSession(session))?.last_turn).toMatchObject({ status: "completed" });
  });

  it("told of at its start: its question is durable first, then its end: two syncs", async () => {
    const { agent, session, counts, cwd } = await countedAgent();
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
    expect(counts).toEqual({ syncs: 2, lazy: 0 });
  });

  it("acknowledged by its answer, a tool runs only once the start is durable", async () => {
    const { sim, store, agent, session, counts, cwd } = await countedAgent();
    sim.script([
      { type: "tool_calls", calls: [{ name: "write_file", arguments: { path: "a.txt", content: "x" } }] },
      { type: "reply", text: "done" },
    ]);
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
    expect(counts.lazy).toBe(1);
    expect((await store.getMessages(session)).map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
    ]);
  });
});
