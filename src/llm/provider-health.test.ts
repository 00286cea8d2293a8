// The recorder over a real store: the live view changes with every call, the durable record only on
// a change of state and at a bounded rate, and what the throttle held back is written soon after.
import { afterEach, describe, expect, it } from "vitest";
import { tempProfile } from "../../test/helpers/tmp.js";
import { Redactor } from "../core/redact.js";
import type { WriteOp } from "../store/ops.js";
import { openStore, releaseStore } from "../store/registry.js";
import type { Store } from "../store/store.js";
import { classify } from "./classify.js";
import { ProviderHealthRecorder } from "./provider-health.js";
import { readProviderRecord, withObservation } from "./provider-state.js";
import type { CallOutcome } from "./route-events.js";

const stores: Store[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await releaseStore(store);
});

const refused = classify({
  status: null,
  headers: {},
  body: null,
  transport: { code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:9" },
  phase: "connect",
});

async function setup() {
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
  stores.push(store);
  // The store keeps the record with the newest updated_at: the recorder's clock must be a real one.
  const start = Date.now();
  let now = start;
  const writes: WriteOp[][] = [];
  const recorder = new ProviderHealthRecorder({
    store: {
      getRecord: async (kind, key) => await store.getRecord(kind, key),
      write: (ops) => {
        writes.push(ops);
        return store.write(ops);
      },
    },
    now: () => now,
  });
  const call = (ok: boolean, error = refused): CallOutcome =>
    ok
      ? { provider: "main", model: "m", at: now, ok: true }
      : { provider: "main", model: "m", at: now, ok: false, error };
  const settle = () => new Promise((r) => setTimeout(r, 30));
  return {
    start,
    store,
    recorder,
    writes,
    call,
    settle,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe("ProviderHealthRecorder", () => {
  it("writes a change of state at once, and repeated failures at most every 5 s", async () => {
    const s = await setup();
    s.recorder.observeCall(s.call(false));
    await s.settle();
    expect(s.writes).toHaveLength(1);
    expect((await readProviderRecord(s.store, "main"))?.last_call).toMatchObject({
      ok: false,
      reason: refused.reason,
    });
    for (let i = 0; i < 50; i++) {
      s.advance(50);
      s.recorder.observeCall(s.call(false));
    }
    await s.settle();
    // 2.5 s of failures, 50 calls: nothing new to say beyond the live view.
    expect(s.writes).toHaveLength(1);
    expect(s.recorder.view().get("main")?.last_call?.at).toBe(s.start + 50 * 50);
    s.advance(2600);
    s.recorder.flushDue();
    await s.settle();
    expect(s.writes).toHaveLength(2);
    expect(s.recorder.counters.failures.get(`main ${refused.reason}`)?.count).toBe(51);
  });

  it("a success right after a failure is held back a second, then written by the flush job", async () => {
    const s = await setup();
    s.recorder.observeCall(s.call(false));
    s.advance(200);
    s.recorder.observeCall(s.call(true));
    await s.settle();
    expect(s.writes).toHaveLength(1);
    // The live view is right at once; the store says failing until the flush.
    expect(s.recorder.view().get("main")?.last_call?.ok).toBe(true);
    expect((await readProviderRecord(s.store, "main"))?.last_call?.ok).toBe(false);
    s.advance(900);
    s.recorder.flushDue();
    await s.settle();
    expect(s.writes).toHaveLength(2);
    expect(await readProviderRecord(s.store, "main")).toMatchObject({
      last_call: { ok: true },
      failing_since: null,
    });
  });

  it("successes after a written success are written once a minute, not per call", async () => {
    const s = await setup();
    for (let i = 0; i < 100; i++) {
      s.recorder.observeCall(s.call(true));
      s.advance(500);
    }
    s.recorder.flushDue();
    await s.settle();
    expect(s.writes).toHaveLength(1);
    s.advance(11_000);
    s.recorder.flushDue();
    await s.settle();
    expect(s.writes).toHaveLength(2);
  });

  it("a failure that says nothing of the provider (a context overflow) changes nothing", async () => {
    const s = await setup();
    s.recorder.observeCall(s.call(true));
    s.advance(5000);
    s.recorder.observeCall(
      s.call(
        false,
        classify({ status: 400, headers: {}, body: { error: { code: "context_length_exceeded" } } }),
      ),
    );
    expect(s.recorder.view().get("main")?.last_call?.ok).toBe(true);
  });

  it("our own process out of file descriptors (EMFILE) says nothing of the provider, from a call or a probe", async () => {
    const s = await setup();
    s.recorder.observeCall(s.call(true));
    s.advance(5000);
    const emfile = classify({
      status: null,
      headers: {},
      body: null,
      transport: { code: "EMFILE", message: "connect EMFILE 127.0.0.1:9 - Local (undefined:undefined)" },
      phase: "connect",
    });
    s.recorder.observeCall(s.call(false, emfile));
    s.recorder.observeProbe("main", {
      ok: false,
      at: Date.now() + 6000,
      model: null,
      reason: emfile.reason,
      message: emfile.message,
    });
    const record = s.recorder.view().get("main");
    expect(record?.last_call?.ok).toBe(true);
    expect(record?.last_probe ?? null).toBeNull();
    expect(record?.failing_since).toBeNull();
  });

  it("folds in what another process wrote, so the newest of each fact survives", async () => {
    const s = await setup();
    // Another process (a `tenax chat`) saw the probe reach it, later than this one looked.
    s.recorder.observeCall(s.call(false));
    await s.settle();
    const other = withObservation(await readProviderRecord(s.store, "main"), "probe", {
      ok: true,
      at: s.start + 3000,
      model: null,
      reason: null,
      message: "connected",
    });
    await s.store.putRecord("component", "provider/main", other);
    s.advance(6000);
    s.recorder.observeCall(s.call(false));
    await s.settle();
    const stored = await readProviderRecord(s.store, "main");
    expect(stored?.last_probe?.at).toBe(s.start + 3000);
    expect(stored?.last_call?.at).toBe(s.start + 6000);
    expect(stored?.failing_since).toBe(s.start);
  });

  it("flush() writes what is held back, for a process about to close", async () => {
    const s = await setup();
    s.recorder.observeCall(s.call(false));
    s.recorder.observeCall(s.call(true));
    await s.recorder.flush();
    expect((await readProviderRecord(s.store, "main"))?.last_call?.ok).toBe(true);
  });

  it("redacts the profile's secrets by value from every message it keeps, a probe's, a call's or the store's", async () => {
    // Not shaped like a key: only redaction by value finds it.
    const secret = "tenaxmain-9f8e7d6c5b4a";
    const marker = "[redacted:providers.main.api_keys[0]]";
    const paths = tempProfile();
    // A store with no redactor of its own, as one that predates a secret: the recorder's must do.
    const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
    stores.push(store);
    await store.putRecord("component", "provider/old", {
      last_call: { ok: false, at: 1, model: "m", reason: "auth", message: `key ${secret} refused` },
      last_probe: null,
      last_success_at: null,
      failing_since: 1,
    });
    const recorder = new ProviderHealthRecorder({
      store,
      now: Date.now,
      redactor: new Redactor([{ name: "providers.main.api_keys[0]", value: secret }]),
    });
    recorder.observeProbe("main", {
      ok: false,
      at: Date.now(),
      model: null,
      reason: "auth",
      message: `GET http://127.0.0.1:9/v1/models: Incorrect API key provided: ${secret}.`,
    });
    recorder.observeCall({
      provider: "other",
      model: "m",
      at: Date.now(),
      ok: false,
      error: { ...refused, message: `a proxy quoted ${secret} back` },
    });
    recorder.observeCall({ provider: "old", model: "m", at: Date.now(), ok: true });
    await recorder.flush();
    const view = JSON.stringify([...recorder.view()]);
    expect(view).not.toContain(secret);
    expect(recorder.view().get("main")?.last_probe?.message).toBe(
      `GET http://127.0.0.1:9/v1/models: Incorrect API key provided: ${marker}.`,
    );
    expect(recorder.view().get("other")?.last_call?.message).toBe(`a proxy quoted ${marker} back`);
    expect(JSON.stringify(await readProviderRecord(store, "main"))).toContain(marker);
    for (const provider of ["main", "other", "old"])
      expect(JSON.stringify(await readProviderRecord(store, provider))).not.toContain(secret);
  });
});
