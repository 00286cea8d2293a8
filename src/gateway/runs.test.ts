// The runs registry over a real store, with a scripted stand-in for the gateway's turns: events
// numbered without gaps and committed before they are published, text deltas of one tick grouped,
// Idempotency-Keys (sequential, concurrent, after a restart, reused for another body), stop,
// settling at startup, resumed turns, and pruning.

import { describe, expect, it } from "vitest";
import { FakeGateway } from "../../test/helpers/fake-gateway.js";
import { fakeDeps } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import type { AgentEvent } from "../agent/turn.js";
import { HttpError } from "../http/http-error.js";
import { openStore } from "../store/registry.js";
import { eventKey, putOp, RUN_EVENT_KIND, RUN_KIND, type RunEvent } from "./run-records.js";
import { fingerprint, RunRegistry } from "./runs.js";

async function setup() {
  const deps = fakeDeps();
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0, deps });
  const gateway = new FakeGateway(store);
  const make = () => new RunRegistry({ store, gateway, now: () => deps.clock.now(), retentionMs: 3_600_000 });
  return { deps, store, gateway, runs: make(), make };
}

const ask = (text: string, key?: string) => ({
  text,
  fingerprint: fingerprint(undefined, { messages: [{ role: "user", content: text }] }),
  ...(key ? { idempotencyKey: key } : {}),
});

describe("RunRegistry", () => {
  it("numbers events 1, 2, 3…, commits each before publishing it, and groups one tick's text", async () => {
    const { store, gateway, runs } = await setup();
    const { state, created } = await runs.submit(ask("hello"));
    expect(created).toBe(true);
    expect(state).toMatchObject({ status: "running", last_event_id: expect.any(Number) });
    const heard: RunEvent[] = [];
    const log = runs.following(state.run_id);
    log?.subscribe(async (event) => {
      // Persist, then publish: the event is in the store before any client hears of it.
      expect(await store.getRecord(RUN_EVENT_KIND, eventKey(state.run_id, event.id))).toEqual(event);
      heard.push(event);
    });
    gateway.say(state.session_id, "a", "b", "c");
    await log?.flush();
    gateway.say(state.session_id, "d");
    await gateway.end(state.session_id);
    await runs.settled();

    const all = await runs.events(state, 0);
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.map((e) => e.type)).toEqual([
      "run.started",
      "turn_started",
      "text",
      "text",
      "turn_finished",
      "run.finished",
    ]);
    // Three deltas of one tick became one event.
    expect(all[2]?.data).toEqual({ type: "text", delta: "abc" });
    expect(heard.map((e) => e.id)).toEqual(all.filter((e) => e.id > state.last_event_id).map((e) => e.id));
    expect((await runs.events(state, 4)).map((e) => e.id)).toEqual([5, 6]);
    expect(await runs.get(state.run_id)).toMatchObject({
      status: "completed",
      reply: "abcd",
      partial: false,
      last_event_id: 6,
      turn_id: expect.stringMatching(/^t_/),
    });
    expect(runs.following(state.run_id)).toBeUndefined();
  });

  it("an Idempotency-Key gives one run for repeated, concurrent and post-restart submissions", async () => {
    const { gateway, runs, make } = await setup();
    const [a, b] = await Promise.all([
      await runs.submit(ask("once", "k1")),
      await runs.submit(ask("once", "k1")),
    ]);
    expect(a.state.run_id).toBe(b.state.run_id);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    const again = await runs.submit(ask("once", "k1"));
    expect(again).toMatchObject({ created: false, state: { run_id: a.state.run_id } });
    expect(gateway.launches).toBe(1);

    const reused = await runs.submit(ask("something else", "k1")).catch((e: unknown) => e);
    expect(reused).toBeInstanceOf(HttpError);
    expect(reused).toMatchObject({ status: 409, code: "idempotency_key_reused" });

    await gateway.end(a.state.session_id);
    await runs.settled();
    // A new registry on the same store (a restarted gateway) finds the run by its key.
    const restarted = make();
    const after = await restarted.submit(ask("once", "k1"));
    expect(after).toMatchObject({ created: false, state: { run_id: a.state.run_id, status: "completed" } });
    expect(gateway.launches).toBe(1);
  });

  it("a submission the gateway refuses frees its key for the retry", async () => {
    const { gateway, runs } = await setup();
    const refuse = gateway.launch.bind(gateway);
    gateway.launch = () => Promise.reject(new HttpError(429, "rate_limit_error", "too_many_turns", "full"));
    await expect(runs.submit(ask("later", "k2"))).rejects.toMatchObject({ status: 429 });
    gateway.launch = refuse;
    const retried = await runs.submit(ask("later", "k2"));
    expect(retried.created).toBe(true);
  });

  it("stop interrupts a running run; a finished run is not stopped again", async () => {
    const { runs } = await setup();
    const { state } = await runs.submit(ask("long"));
    expect(await runs.stop(state.run_id, "stopped by the test")).toBe(true);
    await runs.settled();
    expect(await runs.get(state.run_id)).toMatchObject({ status: "interrupted", partial: true });
    const types = (await runs.events(state, 0)).map((e) => e.type);
    expect(types).toContain("run.stop_requested");
    expect(types.at(-1)).toBe("run.finished");
    expect(await runs.stop(state.run_id, "again")).toBe(false);
  });

  it("at startup settles runs left running from their turn's status, and resumed turns rejoin their run", async () => {
    const { store, gateway, runs, make } = await setup();
    const lost = await runs.submit(ask("lost"));
    const resumed = await runs.submit(ask("resumed"));
    gateway.say(lost.state.session_id, "half");
    await runs.following(lost.state.run_id)?.flush();
    // The process "dies": its turns are reaped as interrupted, the runs stay "running" in the store.
    for (const s of [lost.state, resumed.state]) {
      const turn = gateway.turns.get(s.session_id);
      await store.updateTurn({ id: turn?.turnId ?? "", status: "interrupted", error: "the process stopped" });
      gateway.turns.delete(s.session_id);
    }
    const next = make();
    const resumedTurn = (await store.getTurns(resumed.state.session_id))[0]?.id ?? "";
    const watcher = await next.watcherFor(resumedTurn, resumed.state.session_id);
    expect(watcher).toBeDefined();
    expect(await next.watcherFor("t_unknown", resumed.state.session_id)).toBeUndefined();

    expect(await next.recover()).toBe(1);
    expect(await next.get(lost.state.run_id)).toMatchObject({
      status: "interrupted",
      reply: "half",
      partial: true,
      error: { code: "interrupted", message: "the process stopped" },
    });
    expect((await next.events(lost.state, 0)).at(-1)?.type).toBe("run.finished");

    watcher?.onEvent({ type: "text", delta: "back" } as AgentEvent);
    watcher?.onEvent({
      type: "turn_finished",
      turn_id: resumedTurn,
      status: "completed",
      partial: false,
      error: null,
      failure: null,
    });
    await next.settled();
    const events = await next.events(resumed.state, 0);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.type).slice(-4)).toEqual([
      "run.resumed",
      "text",
      "turn_finished",
      "run.finished",
    ]);
    expect(await next.get(resumed.state.run_id)).toMatchObject({
      status: "completed",
      turn_id: resumedTurn,
      reply: "back",
    });
  });

  it("a resumed turn that stops without turn_finished still ends its run, from the turn's stored status", async () => {
    const { store, gateway, runs, make } = await setup();
    const { state } = await runs.submit(ask("resume me"));
    const turnId = gateway.turns.get(state.session_id)?.turnId ?? "";
    gateway.turns.delete(state.session_id);
    const next = make();
    const watcher = await next.watcherFor(turnId, state.session_id);
    watcher?.onEvent({ type: "text", delta: "par" } as AgentEvent);
    // While its turn is marked running (about to be resumed, or running), the run is left alone.
    expect(await next.settleOrphans()).toBe(0);
    await store.updateTurn({ id: turnId, status: "failed", error: "the resumed turn threw" });
    await next.settled();
    expect(await next.get(state.run_id)).toMatchObject({
      status: "failed",
      error: { code: "turn_failed", type: "server_error", message: "the resumed turn threw" },
      reply: "par",
      partial: true,
    });
    expect((await next.events(state, 0)).at(-1)?.data).toMatchObject({
      type: "run.finished",
      status: "failed",
    });
  });

  it("a run stored before its turn id (killed right after the 202) rejoins its resumed turn", async () => {
    const { deps, store, gateway, runs, make } = await setup();
    const { state } = await runs.submit(ask("killed early"));
    const turnId = gateway.turns.get(state.session_id)?.turnId ?? "";
    gateway.turns.delete(state.session_id);
    // As stored when the process died before the run's turn_started event was committed.
    await store.write([
      putOp(RUN_KIND, state.run_id, state.session_id, { ...state, turn_id: null }, deps.clock.now()),
    ]);
    await store.updateTurn({ id: turnId, status: "interrupted", error: "the process stopped" });
    const next = make();
    const watcher = await next.watcherFor(turnId, state.session_id);
    expect(watcher).toBeDefined();
    expect(await next.recover()).toBe(0);
    watcher?.onEvent({ type: "text", delta: "done" } as AgentEvent);
    watcher?.onEvent({
      type: "turn_finished",
      turn_id: turnId,
      status: "completed",
      partial: false,
      error: null,
      failure: null,
    });
    await next.settled();
    expect(await next.get(state.run_id)).toMatchObject({
      status: "completed",
      turn_id: turnId,
      reply: "done",
    });
  });

  it("prunes ended runs past the retention period, with their events and key, and keeps the rest", async () => {
    const { deps, gateway, runs } = await setup();
    const old = await runs.submit(ask("old", "k-old"));
    await gateway.end(old.state.session_id);
    await runs.settled();
    deps.advance(2 * 3_600_000);
    const fresh = await runs.submit(ask("fresh"));
    expect(await runs.prune()).toEqual([old.state.run_id]);
    expect(await runs.get(old.state.run_id)).toBeNull();
    expect(await runs.events(old.state, 0)).toEqual([]);
    expect((await runs.get(fresh.state.run_id))?.status).toBe("running");
    // The key is free again: it starts a new run.
    expect((await runs.submit(ask("old", "k-old"))).created).toBe(true);
  });

  it("a damaged run record reads as no run, and is skipped when runs are listed", async () => {
    const { store, runs } = await setup();
    await store.putRecord("run", "run_bad", { run_id: "run_bad", status: "sideways" });
    expect(await runs.get("run_bad")).toBeNull();
    expect(await runs.recover()).toBe(0);
  });

  it("deleting a session deletes its runs, their events and their keys", async () => {
    const { store, gateway, runs } = await setup();
    const { state } = await runs.submit(ask("gone soon", "k-gone"));
    await gateway.end(state.session_id);
    await runs.settled();
    expect((await runs.events(state, 0)).length).toBeGreaterThan(2);
    await store.deleteSession(state.session_id);
    expect(await runs.get(state.run_id)).toBeNull();
    expect(await runs.events(state, 0)).toEqual([]);
    expect((await runs.submit(ask("gone soon", "k-gone"))).created).toBe(true);
  });
});
