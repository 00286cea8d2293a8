// What a turn asks of the disk, on a real store: a turn its caller acknowledges by its answer (a
// chat completion not streamed) makes one synced commit, its end's, which carries the answer, the
// caller's end writes and the turn's row, and its start waits for that sync; a turn told of at its
// start makes its question durable first, one synced commit more; a tool never runs before the
// start is durable. The turn's writes are counted as the store is asked for them (the process's
// other writers, such as the provider health records, commit on their own timers), and that a
// write made with durableWithNext asks for no sync of its own is src/store/wal-sync.test.ts's;
// that the chat route asks for these turns is test/gateway-chat-syncs.test.ts's.
import { describe, expect, it } from "vitest";
import { cleanups, setupAgent } from "../../test/helpers/agent.js";
import { countWrites } from "../../test/helpers/counted-writes.js";
import type { WriteOp } from "../store/ops.js";

async function countedAgent() {
  const { sim, store, agent, session, project } = await setupAgent();
  // The session's writes as the store is asked for them: synced, or durable with the next sync.
  const ofSession = (ops: readonly WriteOp[]) =>
    ops.some((op) => ("session_id" in op && op.session_id === session) || op.op === "turn.update");
  const counted = countWrites(store, ofSession);
  cleanups.push(async () => counted.restore());
  return { sim, store, agent, session, counts: counted.counts, cwd: project };
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
