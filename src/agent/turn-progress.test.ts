// The progress tracker on fake time, over a real store: a silent turn is stalled once (an event and
// a store record) and clears on progress; an approval wait is never a stall; a tool's output counts
// only while a tool runs; the deadline ends a turn once (and never one whose caller keeps its own);
// a stop request in the store ends the turn it names; nothing of a turn is left in the store after it.
import { afterEach, describe, expect, it } from "vitest";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { TurnInterrupt } from "./turn-failure.js";
import {
  type ProgressEvent,
  STALL_KIND,
  STOP_KIND,
  type StallRecord,
  type StopRecord,
  TurnProgress,
} from "./turn-progress.js";

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await releaseStore(s);
});

async function setup(options: { deadline?: boolean; output?: () => number; deadlineMs?: number } = {}) {
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
  stores.push(store);
  const deps = fakeDeps();
  // A real session: a record of it goes when the session does.
  const { id: session, op } = store.sessionOp({ title: "t", source: "cli", model: "m" });
  await store.write([op]);
  const tracker = new TurnProgress({
    clock: deps.clock,
    stallAfterMs: 2000,
    deadlineMs: options.deadlineMs ?? 60_000,
    store,
  });
  const events: ProgressEvent[] = [];
  const stops: TurnInterrupt[] = [];
  const turn = tracker.begin({
    sessionId: session,
    turnId: "turn_1",
    deadline: options.deadline ?? true,
    emit: (e) => events.push(e),
    stop: (reason) => stops.push(reason),
    ...(options.output ? { outputBytes: options.output } : {}),
  });
  const stall = async () => await store.getRecord<StallRecord>(STALL_KIND, "turn_1");
  return { store, deps, tracker, turn, events, stops, stall, session };
}

describe("the turn progress tracker", () => {
  it("tells a stall once, records it, and clears it on progress", async () => {
    const { deps, tracker, turn, events, stall, session } = await setup();
    deps.advance(1999);
    await tracker.check();
    expect(events).toEqual([]);
    deps.advance(1);
    await tracker.check();
    deps.advance(1000);
    await tracker.check();
    await tracker.settled();
    expect(events.map((e) => e.type)).toEqual(["turn_stalled"]);
    expect(events[0]).toMatchObject({
      session_id: session,
      turn_id: "turn_1",
      phase: "provider",
      elapsed_ms: 2000,
      layer: "lifecycle",
    });
    expect(events[0]?.message).toContain(`tenax sessions stop ${session}`);
    expect(await stall()).toMatchObject({ session_id: session, turn_id: "turn_1", phase: "provider" });
    expect(tracker.running()[0]?.stalled).toBe(true);

    turn.progress();
    expect(events.map((e) => e.type)).toEqual(["turn_stalled", "turn_stall_cleared"]);
    expect(events[1]).toMatchObject({ elapsed_ms: 3000 });
    await tracker.settled();
    expect(await stall()).toBeNull();
    await turn.end();
    expect(tracker.running()).toEqual([]);
  });

  it("never takes a wait for an approval for a stall, and starts counting again after it", async () => {
    const { deps, tracker, turn, events } = await setup();
    turn.enter("tool");
    turn.enter("approval");
    deps.advance(9000);
    await tracker.check();
    expect(events).toEqual([]);
    turn.enter("tool");
    deps.advance(1999);
    await tracker.check();
    expect(events).toEqual([]);
    deps.advance(1);
    await tracker.check();
    expect(events).toMatchObject([{ type: "turn_stalled", phase: "tool" }]);
  });

  it("counts a tool's output as progress only while a tool runs", async () => {
    let bytes = 0;
    const { deps, tracker, turn, events } = await setup({ output: () => bytes });
    // A background process writing while the provider hangs does not hide the provider's stall.
    for (let i = 0; i < 3; i++) {
      deps.advance(1000);
      bytes += 10;
      await tracker.check();
    }
    expect(events).toMatchObject([{ type: "turn_stalled", phase: "provider" }]);
    turn.enter("tool");
    events.length = 0;
    for (let i = 0; i < 5; i++) {
      deps.advance(1000);
      bytes += 10;
      await tracker.check();
    }
    expect(events).toEqual([]);
    deps.advance(2000);
    await tracker.check();
    expect(events).toMatchObject([{ type: "turn_stalled", phase: "tool" }]);
  });

  it("ends a turn at its deadline, once, with code turn_deadline", async () => {
    const { deps, tracker, turn, events, stops } = await setup({ deadlineMs: 10_000 });
    for (let t = 0; t < 9; t++) {
      deps.advance(1000);
      turn.progress(); // a busy turn: never stalled, but its time runs out all the same
      await tracker.check();
    }
    expect(stops).toEqual([]);
    deps.advance(1000);
    await tracker.check();
    deps.advance(1000);
    await tracker.check();
    expect(stops).toHaveLength(1);
    expect(TurnInterrupt.isInstance(stops[0])).toBe(true);
    expect(stops[0]?.code).toBe("turn_deadline");
    expect(stops[0]?.message).toContain("agent.turn_deadline (10 s)");
    expect(events).toMatchObject([{ type: "turn_deadline", elapsed_ms: 10_000, turn_deadline_ms: 10_000 }]);
  });

  it("leaves the deadline to a caller that keeps its own, and still tells its stalls", async () => {
    const { deps, tracker, events, stops } = await setup({ deadline: false });
    deps.advance(120_000);
    await tracker.check();
    expect(stops).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(["turn_stalled"]);
  });

  it("ends the turn a stop request in the store names, and leaves nothing of it in the store", async () => {
    const { store, deps, tracker, turn, events, stops, stall, session } = await setup();
    deps.advance(2000);
    await tracker.check();
    await tracker.settled();
    expect(await stall()).not.toBeNull();
    const request: StopRecord = {
      session_id: session,
      turn_id: "turn_1",
      requested_at: deps.clock.now(),
      by: "tenax sessions stop (pid 1)",
    };
    await store.putRecord(STOP_KIND, "turn_1", request);
    await tracker.check();
    await tracker.check();
    expect(stops.map((s) => [s.code, s.message])).toEqual([
      ["stopped", "stopped by tenax sessions stop (pid 1)"],
    ]);
    expect(events.map((e) => e.type)).toEqual(["turn_stalled", "turn_stop_requested"]);
    await turn.end();
    expect(await stall()).toBeNull();
    expect(await store.getRecord(STOP_KIND, "turn_1")).toBeNull();
  });
});
