// A turn whose lease another process took over ends quietly: its answer is not written, no further
// tool of it runs, and it leaves the turn's row to the new owner. In-process: the real store on a
// temp file, the simulator over real HTTP; the "other process" is the takeover a resuming gateway
// makes (the reaper's interrupt, then restartTurn), written to the same store.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { restartTurn } from "../src/agent/turn-resume.js";
import type { Store } from "../src/store/store.js";
import { setupAgent } from "./helpers/agent.js";

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What another process does to a turn it finds dead: interrupt it (new epoch), then take it over. */
async function takeOver(store: Store, sessionId: string): Promise<{ turnId: string; epoch: number }> {
  const turn = (await store.runningTurns())[0];
  if (turn === undefined) throw new Error("no running turn to take over");
  await store.write([{ op: "turn.update", id: turn.id, status: "interrupted", new_epoch: true }]);
  const point = await restartTurn(store, sessionId, turn.id, 60_000, Date.now(), "inst:other");
  return { turnId: turn.id, epoch: point.epoch };
}

describe("a turn whose lease was taken over", () => {
  it("ends without writing its answer, leaving the turn to its new owner", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    sim.script([{ type: "reply", text: "the stale answer", chunk_size: 4, chunk_delay_ms: 150 }]);
    const running = agent.turn({ sessionId: session, text: "answer slowly", cwd: project });
    await until(() => sim.requests().length === 1);
    const taken = await takeOver(store, session);
    const result = await running;
    expect(result).toMatchObject({ status: "interrupted", reply: "", partial: true });
    expect(result.failure?.code).toBe("lease_lost");
    expect(result.failure?.message).toContain("another process took this turn over");
    const messages = await store.getMessages(session);
    expect(messages.map((m) => m.content)).toEqual(["answer slowly"]);
    expect(await store.getTurns(session)).toMatchObject([
      { id: taken.turnId, status: "running", lease_owner: "inst:other", lease_epoch: taken.epoch },
    ]);
  });

  it("runs no further tool once a tool's result is refused", async () => {
    const { sim, store, agent, session, project } = await setupAgent();
    const marker = join(project, "second-ran");
    sim.script([
      {
        type: "tool_calls",
        calls: [
          { name: "terminal", arguments: { command: "sleep 0.5; echo first" } },
          { name: "terminal", arguments: { command: `touch ${marker}` } },
        ],
      },
      { type: "reply", text: "never asked for" },
    ]);
    const running = agent.turn({ sessionId: session, text: "two commands", cwd: project });
    // Taken over while the first command runs: its result is the first write refused.
    await until(async () => (await store.getMessages(session)).some((m) => m.role === "assistant"));
    await takeOver(store, session);
    const result = await running;
    expect(result.failure?.code).toBe("lease_lost");
    expect(existsSync(marker)).toBe(false);
    expect(sim.requests()).toHaveLength(1);
    const messages = await store.getMessages(session);
    expect(messages.filter((m) => m.role === "tool")).toEqual([]);
    expect(messages.at(-1)?.role).toBe("assistant");
  });
});
