// A turn this process gave up on because its end could not be written (the store refused it) is
// still "running" in the store under a live lease: nothing runs it, so it is reaped at once, and a
// new turn in its session starts after reaping it. Once the store shows it ended, or this process
// takes it over again, it is forgotten.
// On the real store, whose writes of a turn's end are refused while `failEnds` is set.
import { describe, expect, it } from "vitest";
import { setupAgent } from "../../test/helpers/agent.js";
import type { WriteOp } from "../store/ops.js";
import type { Store } from "../store/store.js";
import { reapDeadTurns } from "./reap.js";

async function agentWithRefusedEnds() {
  const refusal = { failEnds: false };
  const endsTurn = (op: WriteOp) =>
    op.op === "turn.update" && op.ended_at !== undefined && op.ended_at !== null;
  // The real store, but a write that ends a turn fails (a full disk, a store outage) while asked to.
  const refusingEnds = (real: Store) =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === "write") {
          return (ops: WriteOp[], options?: Parameters<Store["write"]>[1]) =>
            refusal.failEnds && ops.some(endsTurn)
              ? Promise.reject(new Error("the store refused the write (test)"))
              : target.write(ops, options);
        }
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  const { store, agent, session, project } = await setupAgent({}, { agentStore: refusingEnds });
  return { store, agent, session, refusal, cwd: project };
}

/** A turn of `session` whose end the store refuses: it throws, and its row stays running. */
async function abandonedTurn(setup: Awaited<ReturnType<typeof agentWithRefusedEnds>>): Promise<string> {
  const { store, agent, session, refusal, cwd } = setup;
  refusal.failEnds = true;
  await expect(agent.turn({ sessionId: session, text: "hello", cwd })).rejects.toThrow("refused the write");
  refusal.failEnds = false;
  const running = await store.runningTurns();
  expect(running).toHaveLength(1);
  const [turn] = running;
  if (turn === undefined) throw new Error("no running turn");
  // Its lease is still good: only this process knows nothing runs it.
  expect(turn.lease_expires_at ?? 0).toBeGreaterThan(agent.leaseNow());
  expect(agent.abandoned(turn.id)).toBe(true);
  return turn.id;
}

describe("turns given up with their end unwritten", () => {
  it("are reaped at once, whatever their lease says, and then forgotten", async () => {
    const setup = await agentWithRefusedEnds();
    const id = await abandonedTurn(setup);
    const reaped = await setup.agent.reap();
    expect(reaped).toEqual([{ turn_id: id, session_id: setup.session, interrupt_count: 1 }]);
    expect(setup.agent.abandoned(id)).toBe(false);
    expect(await setup.store.runningTurns()).toEqual([]);
  });

  it("free their session: the next turn there reaps the given-up one and starts", async () => {
    const setup = await agentWithRefusedEnds();
    const id = await abandonedTurn(setup);
    const result = await setup.agent.turn({ sessionId: setup.session, text: "again", cwd: setup.cwd });
    expect(result).toMatchObject({ status: "completed", reply: "echo: again" });
    const turns = await setup.store.getTurns(setup.session);
    expect(turns.find((t) => t.id === id)?.status).toBe("interrupted");
    expect(setup.agent.abandoned(id)).toBe(false);
  });

  it("are forgotten once the store shows them ended by another process", async () => {
    const setup = await agentWithRefusedEnds();
    const id = await abandonedTurn(setup);
    // Another process reaps it once its lease ran out (it knows nothing of this one's giving up).
    const later = setup.agent.leaseNow() + 24 * 3600_000;
    expect((await reapDeadTurns(setup.store, later)).map((t) => t.turn_id)).toEqual([id]);
    expect(setup.agent.abandoned(id)).toBe(true);
    expect(await setup.agent.reap()).toEqual([]);
    expect(setup.agent.abandoned(id)).toBe(false);
  });

  it("are not reaped once taken over again, by this process after another reaped them", async () => {
    const setup = await agentWithRefusedEnds();
    const id = await abandonedTurn(setup);
    const later = setup.agent.leaseNow() + 24 * 3600_000;
    expect((await reapDeadTurns(setup.store, later)).map((t) => t.turn_id)).toEqual([id]);
    await setup.agent.takeOver(setup.session, id);
    expect(setup.agent.abandoned(id)).toBe(false);
    expect(await setup.agent.reap()).toEqual([]);
    expect((await setup.store.runningTurns()).map((t) => t.id)).toEqual([id]);
  });
});
