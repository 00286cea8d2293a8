// The per-session queue of waiting turns: arrival order, a hang-up leaving at once from any place,
// the bound, a waiter that cannot start, and clearing at shutdown; then random interleavings
// checked against a plain list.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SessionQueue } from "./session-queue.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe("SessionQueue", () => {
  it("starts waiters in arrival order, one per startNext, per session", async () => {
    const queue = new SessionQueue<string>(8);
    const started: string[] = [];
    const wait = (session: string, name: string) => {
      const entry = queue.enqueue(session, () => {
        started.push(name);
        return name;
      });
      if (!entry.queued) throw new Error("queue full");
      return entry;
    };
    const a = wait("s1", "a");
    const b = wait("s1", "b");
    const other = wait("s2", "x");
    const c = wait("s1", "c");
    expect([a, b, c].map((e) => e.position)).toEqual([1, 2, 3]);
    expect(other.position).toBe(1);
    expect(queue.waiting("s1")).toBe(3);
    expect(queue.size).toBe(4);
    await tick();
    expect(started).toEqual([]);
    expect(queue.startNext("s1")).toBe(true);
    expect(await a.started).toBe("a");
    expect(queue.startNext("s1")).toBe(true);
    expect(queue.startNext("s1")).toBe(true);
    expect(await Promise.all([b.started, c.started])).toEqual(["b", "c"]);
    expect(queue.startNext("s1")).toBe(false);
    expect(started).toEqual(["a", "b", "c"]);
    expect(queue.waiting("s2")).toBe(1);
  });

  it("a waiter whose signal aborts leaves at once, frees its place, and never starts", async () => {
    const queue = new SessionQueue<string>(3);
    const started: string[] = [];
    const hangups = new Map<string, AbortController>();
    const wait = (name: string) => {
      const controller = new AbortController();
      hangups.set(name, controller);
      return queue.enqueue(
        "s",
        () => {
          started.push(name);
          return name;
        },
        controller.signal,
      );
    };
    const [a, b, c] = [wait("a"), wait("b"), wait("c")];
    expect(wait("d").queued).toBe(false);
    // Hang-up in the middle, after real time has passed.
    await tick();
    hangups.get("b")?.abort(new Error("client gone"));
    expect(queue.waiting("s")).toBe(2);
    if (!b.queued) throw new Error("b was queued");
    await expect(b.started).rejects.toThrow("client gone");
    // Its place is free again: a newcomer goes last.
    const e = wait("e");
    expect(e).toMatchObject({ queued: true, position: 3 });
    while (queue.startNext("s")) await tick();
    expect(started).toEqual(["a", "c", "e"]);
    if (!a.queued || !c.queued) throw new Error("queued");
    expect(await Promise.all([a.started, c.started])).toEqual(["a", "c"]);
    // An abort after starting changes nothing.
    hangups.get("a")?.abort(new Error("late"));
    expect(queue.size).toBe(0);
  });

  it("a signal already aborted is never queued; bound 0 queues nothing", async () => {
    const queue = new SessionQueue<number>(1);
    const gone = AbortSignal.abort(new Error("already gone"));
    const entry = queue.enqueue("s", () => 1, gone);
    if (!entry.queued) throw new Error("expected an entry");
    await expect(entry.started).rejects.toThrow("already gone");
    expect(queue.waiting("s")).toBe(0);
    expect(new SessionQueue<number>(0).enqueue("s", () => 1)).toEqual({ queued: false });
  });

  it("a waiter that cannot start is rejected and the next one starts instead", async () => {
    const queue = new SessionQueue<string>(4);
    const first = queue.enqueue("s", () => {
      throw new Error("session deleted");
    });
    const second = queue.enqueue("s", () => "second");
    if (!first.queued || !second.queued) throw new Error("queued");
    expect(queue.startNext("s")).toBe(true);
    await expect(first.started).rejects.toThrow("session deleted");
    expect(await second.started).toBe("second");
  });

  it("rejectAll answers every waiter with its own error and empties the queue", async () => {
    const queue = new SessionQueue<string>(4);
    const entries = ["s1", "s1", "s2"].map((s) => queue.enqueue(s, () => "never"));
    let made = 0;
    expect(queue.rejectAll(() => new Error(`shutting down ${++made}`))).toBe(3);
    const errors = await Promise.all(
      entries.map((e) =>
        e.queued
          ? e.started.then(
              () => null,
              (error: Error) => error.message,
            )
          : null,
      ),
    );
    expect(errors).toEqual(["shutting down 1", "shutting down 2", "shutting down 3"]);
    expect(queue.size).toBe(0);
    expect(queue.startNext("s1")).toBe(false);
  });

  it("keeps exact order under random arrivals, hang-ups and starts (checked against a list)", async () => {
    const seed = Number(process.env.TENAX_SEED ?? Date.now() % 1_000_000);
    console.log(`session-queue property seed: ${seed}`);
    const action = fc.oneof(
      fc.record({ kind: fc.constant("arrive" as const) }),
      fc.record({ kind: fc.constant("hangup" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("next" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { maxLength: 60 }),
        fc.integer({ min: 0, max: 5 }),
        async (actions, bound) => {
          const queue = new SessionQueue<number>(bound);
          const model: number[] = [];
          const started: number[] = [];
          const expected: number[] = [];
          const controllers = new Map<number, AbortController>();
          let id = 0;
          for (const a of actions) {
            if (a.kind === "arrive") {
              const n = ++id;
              const controller = new AbortController();
              const entry = queue.enqueue(
                "s",
                () => {
                  started.push(n);
                  return n;
                },
                controller.signal,
              );
              expect(entry.queued).toBe(model.length < bound);
              if (entry.queued) {
                model.push(n);
                controllers.set(n, controller);
                expect(entry.position).toBe(model.length);
              }
            } else if (a.kind === "hangup" && model.length > 0) {
              const n = model.splice(a.pick % model.length, 1)[0] as number;
              controllers.get(n)?.abort(new Error("gone"));
            } else if (a.kind === "next") {
              const n = model.shift();
              expect(queue.startNext("s")).toBe(n !== undefined);
              if (n !== undefined) expected.push(n);
            }
            expect(queue.waiting("s")).toBe(model.length);
          }
          expect(started).toEqual(expected);
        },
      ),
      { seed, numRuns: 200 },
    );
  });
});
