// The runs API against a real `tenax gateway run` process and a simulator: a run submitted,
// followed to its end and read back; an event stream cut mid-turn and resumed with Last-Event-ID
// (also across a gateway restart) giving every event exactly once; Idempotency-Key retries giving
// one run and one model call; stop; and every bad input in the OpenAI error shape.
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { expectError, sharedSimGateway, simProfile, startGateway, until } from "./helpers/gateway.js";
import {
  type RunView,
  readEvents,
  type SseEvent,
  started,
  state,
  submit,
  user,
} from "./helpers/runs-client.js";

beforeAll(() => requireBuild());

function expectContiguous(events: SseEvent[], from = 1) {
  expect(events.map((e) => e.id)).toEqual(events.map((_, i) => from + i));
  for (const e of events) expect(e.data.type).toBe(e.event);
}

const slowReply = (text: string) => ({ type: "reply" as const, text, chunk_size: 3, chunk_delay_ms: 100 });

describe("tenax gateway run: the runs API", () => {
  // These only read and write runs of their own: one gateway serves them all.
  describe("on one gateway", () => {
    const shared = sharedSimGateway();
    it("runs a turn in the background: events to the end, then its state with the reply; X-Session-Id continues", async () => {
      const { gw, sim } = shared();
      const caps = (await (await gw.fetch(`/api/capabilities`)).json()) as { capabilities: string[] };
      expect(caps.capabilities).toContain("runs");
      const response = await submit(gw, user("the word is pineapple"));
      expect(response.headers.get("x-session-id")).toMatch(/^s_/);
      const run = await started(response);
      expect(run).toMatchObject({ object: "run", status: "running", run_id: expect.stringMatching(/^run_/) });
      expect(response.headers.get("location")).toBe(`/v1/runs/${run.run_id}`);

      const { events, ended } = await readEvents(gw, run.run_id);
      expect(ended).toBe(true);
      expectContiguous(events);
      expect(events[0]?.event).toBe("run.started");
      expect(events.map((e) => e.event)).toContain("turn_started");
      const text = events
        .filter((e) => e.event === "text")
        .map((e) => e.data.delta)
        .join("");
      expect(text).toBe("echo: the word is pineapple");
      expect(events.at(-1)).toMatchObject({
        event: "run.finished",
        data: { status: "completed", reply: "echo: the word is pineapple", partial: false },
      });
      const done = await state(gw, run.run_id);
      expect(done).toMatchObject({
        status: "completed",
        reply: "echo: the word is pineapple",
        partial: false,
        error: null,
        session_id: run.session_id,
        turn_id: expect.stringMatching(/^t_/),
        last_event_id: events.length,
      });

      const next = await started(await submit(gw, user("and now?"), { "x-session-id": run.session_id }));
      expect(next.session_id).toBe(run.session_id);
      await readEvents(gw, next.run_id);
      expect((await state(gw, next.run_id)).reply).toBe("echo: and now?");
      expect(JSON.stringify(sim.requests()[1]?.body)).toContain("pineapple");
    });

    it("a stream cut mid-turn and resumed with Last-Event-ID gives every event exactly once", async () => {
      const { gw, sim } = shared();
      sim.script([slowReply("one two three four five six seven eight nine ten")]);
      const run = await started(await submit(gw, user("count")));
      const first = await readEvents(gw, run.run_id, { stopAfter: 4 });
      expect(first.ended).toBe(false);
      const lastSeen = first.events.at(-1)?.id ?? 0;
      // The turn is still streaming when the client comes back.
      expect((await state(gw, run.run_id)).status).toBe("running");
      const rest = await readEvents(gw, run.run_id, { after: lastSeen });
      expect(rest.ended).toBe(true);
      const joined = [...first.events, ...rest.events];
      expectContiguous(joined);
      expect(joined.filter((e) => e.event === "text").length).toBeGreaterThan(2);
      expect(joined.at(-1)?.data).toMatchObject({ type: "run.finished", status: "completed" });
      // The same union as one whole replay, event for event.
      const whole = await readEvents(gw, run.run_id);
      expect(whole.events).toEqual(joined);
      // The query parameter works as the header does.
      expect((await readEvents(gw, run.run_id, { after: 2, query: true })).events).toEqual(joined.slice(2));
    });

    it("a repeated Idempotency-Key, sequential or concurrent, gives the same run and one model call", async () => {
      const { gw, sim } = shared();
      sim.script([slowReply("only once, please")]);
      const key = { "idempotency-key": "order-7f3a" };
      const answers = await Promise.all([1, 2, 3].map(() => submit(gw, user("pay"), key)));
      const bodies = (await Promise.all(answers.map((r) => r.json()))) as RunView[];
      expect(new Set(bodies.map((b) => b.run_id)).size).toBe(1);
      expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 202]);
      const runId = bodies[0]?.run_id ?? "";
      await readEvents(gw, runId);
      const again = await submit(gw, user("pay"), key);
      expect(again.status).toBe(200);
      expect(((await again.json()) as RunView).run_id).toBe(runId);
      expect(sim.requests()).toHaveLength(1);

      const reused = await expectError(await submit(gw, user("refund"), key), 409, "idempotency_key_reused");
      expect(reused.message).toContain("order-7f3a");
      expect(sim.requests()).toHaveLength(1);
    });

    it("stop interrupts a running run; stopping it again answers its state", async () => {
      const { gw, sim } = shared();
      sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
      const run = await started(await submit(gw, user("wait")));
      await until(() => sim.requests().length === 1);
      const following = readEvents(gw, run.run_id);
      const stop = await gw.fetch(`/v1/runs/${run.run_id}/stop`, { method: "POST" });
      expect(stop.status).toBe(202);
      expect(await stop.json()).toMatchObject({ run_id: run.run_id, stop_requested: true });
      const { events, ended } = await following;
      expect(ended).toBe(true);
      expect(events.map((e) => e.event)).toContain("run.stop_requested");
      expect(events.at(-1)?.data).toMatchObject({
        type: "run.finished",
        status: "interrupted",
        partial: true,
      });
      await until(() => sim.requests()[0]?.ended !== "open");
      const twice = await gw.fetch(`/v1/runs/${run.run_id}/stop`, { method: "POST" });
      expect(twice.status).toBe(200);
      expect(await twice.json()).toMatchObject({ status: "interrupted", stop_requested: false });
    });

    it("answers every bad input in the OpenAI error shape with its status", async () => {
      const { gw } = shared();
      await expectError(await gw.fetch(`/v1/runs/run_nope`), 404, "run_not_found");
      await expectError(await gw.fetch(`/v1/runs/run_nope/events`), 404, "run_not_found");
      await expectError(await gw.fetch(`/v1/runs/run_nope/stop`, { method: "POST" }), 404, "run_not_found");
      const list = await gw.fetch(`/v1/runs`);
      expect(list.headers.get("allow")).toBe("POST");
      await expectError(list, 405, "method_not_allowed");
      await expectError(await gw.fetch(`/v1/runs/run_nope`, { method: "DELETE" }), 405, "method_not_allowed");
      await expectError(await gw.fetch(`/v1/runs/run_nope/stop`), 405, "method_not_allowed");
      await expectError(await submit(gw, "{not json"), 400, "invalid_json");
      await expectError(await submit(gw, JSON.stringify({ messages: [] })), 400, "invalid_field");
      await expectError(
        await submit(gw, JSON.stringify({ messages: [{ role: "user", content: "x" }], colour: 1 })),
        400,
        "unknown_field",
      );
      const stream = await expectError(
        await submit(gw, JSON.stringify({ stream: true, messages: [{ role: "user", content: "x" }] })),
        400,
        "invalid_field",
      );
      expect(stream.message).toContain("/v1/runs/ID/events");
      await expectError(await submit(gw, user("x"), { "x-session-id": "s_nope" }), 404, "session_not_found");
      await expectError(
        await submit(gw, user("x"), { "idempotency-key": "k".repeat(300) }),
        400,
        "invalid_idempotency_key",
      );
      const run = await started(await submit(gw, user("fine")));
      await expectError(
        await gw.fetch(`/v1/runs/${run.run_id}/events`, { headers: { "last-event-id": "-1" } }),
        400,
        "invalid_last_event_id",
      );
      expect((await gw.fetch(`/health/live`)).status).toBe(200);
    });
  });

  it("after SIGTERM and a restart, the run's state and the rest of its events are still served", async () => {
    const { home, sim } = await simProfile("drain_timeout: 0.3");
    const gw = await startGateway(home);
    sim.script([
      { ...slowReply("a long answer that will not finish before the drain ends"), chunk_delay_ms: 200 },
    ]);
    const run = await started(await submit(gw, user("long"), { "idempotency-key": "k-restart" }));
    const first = await readEvents(gw, run.run_id, { stopAfter: 3 });
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);

    const again = await startGateway(home);
    const ended = await state(again, run.run_id);
    expect(ended).toMatchObject({ run_id: run.run_id, status: "interrupted", partial: true });
    const rest = await readEvents(again, run.run_id, { after: first.events.at(-1)?.id ?? 0 });
    expect(rest.ended).toBe(true);
    const joined = [...first.events, ...rest.events];
    expectContiguous(joined);
    expect(joined.map((e) => e.event)).toContain("run.shutdown");
    expect(joined.at(-1)?.data).toMatchObject({ type: "run.finished", status: "interrupted" });
    expect(ended.last_event_id).toBe(joined.length);
    // The key still names the run: a retry after the restart starts nothing new.
    const retried = await submit(again, user("long"), { "idempotency-key": "k-restart" });
    expect(retried.status).toBe(200);
    expect(((await retried.json()) as RunView).run_id).toBe(run.run_id);
    expect(sim.requests()).toHaveLength(1);
  });

  it("a run whose turn a killed gateway left behind follows the turn when the next start resumes it", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const run = await started(await submit(gw, user("hang")));
    await until(() => sim.requests().length === 1);
    const before = await readEvents(gw, run.run_id, { stopAfter: 2 });
    gw.child.kill("SIGKILL");
    await gw.exited;
    const again = await startGateway(home);
    const rest = await readEvents(again, run.run_id, { after: 2 });
    expect(rest.ended).toBe(true);
    const joined = [...before.events, ...rest.events];
    expectContiguous(joined);
    expect(joined.map((e) => e.event)).toContain("run.resumed");
    expect(joined.at(-1)?.data).toMatchObject({ type: "run.finished", status: "completed" });
    // The resumed turn keeps its id, and the run's reply is the resumed turn's whole answer.
    const turnId = joined.find((e) => e.event === "turn_started")?.data.turn_id;
    expect(turnId).toMatch(/^t_/);
    expect(joined.find((e) => e.event === "run.resumed")?.data.turn_id).toBe(turnId);
    const resumedAt = joined.findIndex((e) => e.event === "run.resumed");
    const answered = joined
      .slice(resumedAt)
      .filter((e) => e.event === "text")
      .map((e) => e.data.delta)
      .join("");
    expect(answered).toMatch(/^echo: hang/);
    const done = await state(again, run.run_id);
    expect(done).toMatchObject({ status: "completed", turn_id: turnId, reply: answered, partial: false });
    expect(sim.requests()).toHaveLength(2);
  });

  it("a resumed run whose stream starts over with something else ends with that reply alone", async () => {
    const { home, sim } = await simProfile();
    const gw = await startGateway(home);
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const run = await started(await submit(gw, user("hang")));
    await until(() => sim.requests().length === 1);
    gw.child.kill("SIGKILL");
    await gw.exited;
    // The resumed turn's stream says "alpha beta gamma", drops, and its retry says something else.
    sim.script([
      { type: "drop", after_chunks: 3, text: "alpha beta gamma delta" },
      { type: "reply", text: "the resumed answer" },
    ]);
    const again = await startGateway(home);
    const { events, ended } = await readEvents(again, run.run_id, { after: 0 });
    expect(ended).toBe(true);
    const resumedAt = events.findIndex((e) => e.event === "run.resumed");
    expect(resumedAt).toBeGreaterThan(0);
    // A follower that drops what each stream_restart says ends with the run's reply.
    let followed = "";
    for (const e of events.slice(resumedAt)) {
      if (e.event === "text") followed += String(e.data.delta);
      if (e.event === "stream_restart")
        followed = followed.slice(0, followed.length - Number(e.data.discard_chars));
    }
    expect(await state(again, run.run_id)).toMatchObject({
      status: "completed",
      reply: "the resumed answer",
    });
    expect(events.find((e) => e.event === "stream_restart")?.data).toMatchObject({
      discard_chars: "alpha beta gamma".length,
    });
    expect(followed).toBe("the resumed answer");
    expect(sim.requests()).toHaveLength(3);
  });

  it("a run left running by a killed gateway, its turn not resumed, is settled at the next start", async () => {
    const { home, sim } = await simProfile("auto_resume: false");
    const gw = await startGateway(home);
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const run = await started(await submit(gw, user("hang")));
    await until(() => sim.requests().length === 1);
    gw.child.kill("SIGKILL");
    await gw.exited;
    const again = await startGateway(home);
    expect(again.stdout()).toContain("1 run(s) left running by the last gateway were settled");
    const { events, ended } = await readEvents(again, run.run_id);
    expect(ended).toBe(true);
    expectContiguous(events);
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", status: "interrupted", partial: true });
    expect((await state(again, run.run_id)).status).toBe("interrupted");
    expect(sim.requests()).toHaveLength(1);
  });
});
