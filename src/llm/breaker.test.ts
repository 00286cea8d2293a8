// The circuit breaker on fake time: closed → open after unwell failures in a row (and only those
// the classifier marks so), open → half-open after the cool-down with exactly one probe, a success
// closing it and a failed probe opening it again for longer; and two processes (two Stores on one
// real state.db) sharing one breaker: their failures add up and only one of them gets the probe.
import { afterEach, describe, expect, it } from "vitest";
import { classifiedFailure } from "../../test/helpers/classified.js";
import { FAKE_START } from "../../test/helpers/fake-time.js";
import { tempProfile } from "../../test/helpers/tmp.js";
import { storeOptions } from "../store/registry.js";
import { Store } from "../store/store.js";
import {
  type BreakerEvent,
  type BreakerPass,
  CircuitBreakers,
  MemoryBreakerRecords,
  StoreBreakerRecords,
} from "./breaker.js";
import { classify } from "./classify.js";

const target = { provider: "main", model: "big" };
const settings = { failures: 3, window_ms: 10_000, cooldown_ms: 30_000, max_cooldown_ms: 100_000 };
const unwell = classify({ status: 503, headers: {}, body: { error: { message: "upstream unavailable" } } });

function breakers(records = new MemoryBreakerRecords(), owner = "pid:1@1") {
  let now = FAKE_START;
  const events: BreakerEvent[] = [];
  const b = new CircuitBreakers({ records, settings, now: () => now, owner, gone: () => false });
  const emit = (e: BreakerEvent) => events.push(e);
  return {
    b,
    events,
    emit,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
    /** One attempt: ask, and when let through, report `outcome`. */
    async attempt(outcome: "ok" | "fail" | ReturnType<typeof classify>): Promise<BreakerPass> {
      const pass = await b.admit(target, emit);
      if (pass.decision === "open") return pass;
      await b.report(
        target,
        pass,
        outcome === "ok" ? { ok: true } : { ok: false, error: outcome === "fail" ? unwell : outcome },
        emit,
      );
      return pass;
    },
    circuit: async () => (await b.circuits([target]))[0]?.circuit,
  };
}

describe("a model's circuit breaker", () => {
  it("opens after `failures` unwell failures in a row, refuses calls for the cool-down, then lets one probe through", async () => {
    const t = breakers();
    await t.attempt("fail");
    await t.attempt("fail");
    expect(await t.circuit()).toBe("closed");
    await t.attempt("fail");
    expect(await t.circuit()).toBe("open");
    expect(t.events).toEqual([
      expect.objectContaining({
        type: "breaker_opened",
        provider: "main",
        model: "big",
        reason: "server_error",
        failures: 3,
        probe_failed: false,
        cooldown_ms: 30_000,
        retry_at: FAKE_START + 30_000,
      }),
    ]);
    expect(await t.b.admit(target, t.emit)).toEqual({
      decision: "open",
      retry_at: FAKE_START + 30_000,
      reason: "server_error",
    });
    t.advance(30_000);
    expect(await t.circuit()).toBe("half_open");
    const probe = await t.b.admit(target, t.emit);
    expect(probe.decision).toBe("probe");
    // The probe is out: every other call is still refused until it answers.
    expect((await t.b.admit(target, t.emit)).decision).toBe("open");
    await t.b.report(target, probe, { ok: true }, t.emit);
    expect(await t.circuit()).toBe("closed");
    expect(t.events.map((e) => e.type)).toEqual(["breaker_opened", "breaker_half_open", "breaker_closed"]);
    expect((await t.b.admit(target, t.emit)).decision).toBe("closed");
  });

  it("a failed probe opens it again for twice the cool-down, up to max_cooldown", async () => {
    const t = breakers();
    for (let i = 0; i < 3; i++) await t.attempt("fail");
    const cooldowns: number[] = [];
    for (let round = 0; round < 4; round++) {
      // To the end of the cool-down, whatever it is now.
      t.advance(((await t.b.circuits([target]))[0]?.retry_at ?? 0) - t.now());
      const probe = await t.b.admit(target, t.emit);
      expect(probe.decision).toBe("probe");
      await t.b.report(target, probe, { ok: false, error: unwell }, t.emit);
      const last = t.events.at(-1);
      expect(last).toMatchObject({ type: "breaker_opened", probe_failed: true });
      if (last?.type === "breaker_opened") cooldowns.push(last.cooldown_ms);
    }
    expect(cooldowns).toEqual([60_000, 100_000, 100_000, 100_000]);
  });

  it("counts only failures the classifier marks as the model being unwell", async () => {
    const t = breakers();
    const notUnwell = [
      classifiedFailure("invalid_request"),
      classifiedFailure("auth"),
      classifiedFailure("context_overflow"),
      classifiedFailure("content_policy_blocked"),
      classifiedFailure("rate_limit"),
      classifiedFailure("billing"),
    ];
    for (let round = 0; round < 3; round++) for (const error of notUnwell) await t.attempt(error);
    expect(await t.circuit()).toBe("closed");
    for (const reason of ["timeout", "unreachable", "overloaded"] as const)
      await t.attempt(classifiedFailure(reason));
    expect(await t.circuit()).toBe("open");
  });

  it("a streak whose failures are further apart than the window starts over; a success resets it", async () => {
    const t = breakers();
    await t.attempt("fail");
    await t.attempt("fail");
    t.advance(10_001);
    await t.attempt("fail");
    await t.attempt("fail");
    expect(await t.circuit()).toBe("closed");
    await t.attempt("ok");
    await t.attempt("fail");
    await t.attempt("fail");
    expect(await t.circuit()).toBe("closed");
    await t.attempt("fail");
    expect(await t.circuit()).toBe("open");
  });

  it("a probe that tells nothing of the model (a 400) frees the probe for the next call", async () => {
    const t = breakers();
    for (let i = 0; i < 3; i++) await t.attempt("fail");
    t.advance(30_000);
    const probe = await t.b.admit(target, t.emit);
    expect(probe.decision).toBe("probe");
    await t.b.report(target, probe, { ok: false, error: classifiedFailure("invalid_request") }, t.emit);
    expect(await t.circuit()).toBe("half_open");
    expect((await t.b.admit(target, t.emit)).decision).toBe("probe");
  });

  it("disabled, it lets every call through and writes nothing", async () => {
    const records = new MemoryBreakerRecords();
    const b = new CircuitBreakers({ records, settings: { ...settings, enabled: false }, now: () => 0 });
    for (let i = 0; i < 10; i++) {
      const pass = await b.admit(target, () => {});
      await b.report(target, pass, { ok: false, error: unwell }, () => {});
    }
    expect(await records.list()).toEqual([]);
  });
});

describe("one breaker shared by two processes through the store", () => {
  const opened: Store[] = [];
  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
  });

  async function twoProcesses() {
    const paths = tempProfile();
    const options = { ...storeOptions(paths), integrityCheckTimeoutMs: 0 };
    // Two writers on one state.db, as two processes would have them (the registry keeps one per process).
    const a = await Store.open(options);
    const b = await Store.open(options);
    opened.push(a, b);
    let now = Date.now();
    const clock = () => now;
    const make = (store: Store, owner: string) =>
      new CircuitBreakers({
        records: new StoreBreakerRecords(store, clock),
        settings,
        now: clock,
        owner,
        gone: () => false,
      });
    return {
      a: make(a, "pid:100@1"),
      b: make(b, "pid:200@1"),
      advance: (ms: number) => {
        now += ms;
      },
    };
  }

  it("adds up both processes' failures, and both see it open", async () => {
    const { a, b } = await twoProcesses();
    const fail = async (x: CircuitBreakers) =>
      await x.report(target, await x.admit(target, () => {}), { ok: false, error: unwell }, () => {});
    await fail(a);
    await fail(b);
    expect((await a.circuits([target]))[0]?.circuit).toBe("closed");
    await fail(a);
    expect((await b.circuits([target]))[0]).toMatchObject({
      circuit: "open",
      failures: 3,
      reason: "server_error",
    });
    expect((await b.admit(target, () => {})).decision).toBe("open");
  });

  it("lets exactly one probe through when both ask at once after the cool-down", async () => {
    const { a, b, advance } = await twoProcesses();
    for (let i = 0; i < 3; i++)
      await a.report(target, await a.admit(target, () => {}), { ok: false, error: unwell }, () => {});
    advance(30_000);
    const passes = await Promise.all([
      a.admit(target, () => {}),
      b.admit(target, () => {}),
      a.admit(target, () => {}),
      b.admit(target, () => {}),
    ]);
    expect(passes.filter((p) => p.decision === "probe")).toHaveLength(1);
    expect(passes.filter((p) => p.decision === "open")).toHaveLength(3);
    // The winner's success closes it for the other process too.
    const winner = passes.findIndex((p) => p.decision === "probe");
    const who = winner % 2 === 0 ? a : b;
    await who.report(target, passes[winner] as BreakerPass, { ok: true }, () => {});
    expect((await (who === a ? b : a).admit(target, () => {})).decision).toBe("closed");
  });

  it("frees the probe of a process that died holding it", async () => {
    const paths = tempProfile();
    const store = await Store.open({ ...storeOptions(paths), integrityCheckTimeoutMs: 0 });
    opened.push(store);
    let now = Date.now();
    const make = (owner: string, gone: (o: string) => boolean) =>
      new CircuitBreakers({
        records: new StoreBreakerRecords(store, () => now),
        settings,
        now: () => now,
        owner,
        gone,
      });
    const dead = make("pid:300@1", () => false);
    for (let i = 0; i < 3; i++)
      await dead.report(target, await dead.admit(target, () => {}), { ok: false, error: unwell }, () => {});
    now += 30_000;
    expect((await dead.admit(target, () => {})).decision).toBe("probe");
    const alive = make("pid:400@1", (o) => o === "pid:300@1");
    expect((await alive.admit(target, () => {})).decision).toBe("probe");
    const stillWaiting = make("pid:500@1", () => false);
    expect((await stillWaiting.admit(target, () => {})).decision).toBe("open");
  });
});

describe("a store that fails under the breaker", () => {
  it("keeps this process's breaker in memory, from what it last read, and no call fails for it", async () => {
    const shared = new MemoryBreakerRecords();
    let broken = false;
    const store = {
      getRecordText: async (_kind: string, key: string) => {
        if (broken) throw new Error("database disk image is malformed");
        return await shared.read(key);
      },
      listRecords: async () => [],
      write: async (ops: Array<{ key: string; value: string; expect: string | null }>) => {
        if (broken) throw new Error("the store is damaged");
        for (const op of ops) await shared.claim(op.key, JSON.parse(op.value), op.expect);
      },
    };
    const now = FAKE_START;
    const b = new CircuitBreakers({
      records: new StoreBreakerRecords(store, () => now),
      settings,
      now: () => now,
    });
    const fail = async () =>
      await b.report(target, await b.admit(target, () => {}), { ok: false, error: unwell }, () => {});
    await fail();
    await fail();
    broken = true;
    await fail();
    // The third failure, counted in memory on top of the two the store held, opened it.
    expect((await b.admit(target, () => {})).decision).toBe("open");
  });
});
