// The background probe's word against a call's, in-process over a real store, real sockets and the
// real probe: a probe that gets through clears a failed call of a kind it can see (and says so),
// not one it cannot; a key that cannot be looked up makes the look a connect, never a rejection;
// and the wait on the first look is bounded, however long a black-holed provider keeps it.
import { describe, expect, it } from "vitest";
import { blackHole } from "../../test/helpers/black-hole.js";
import { afterThisTest, providerMonitor, until } from "../../test/helpers/provider-monitor.js";
import type { ClassifiedError } from "../llm/classified-error.js";
import { classify } from "../llm/classify.js";
import { providerCondition, readProviderRecord } from "../llm/provider-state.js";
import { startSimulator } from "../llm/simulator/server.js";
import { FIRST_PROVIDER_LOOK_MS } from "./monitor.js";

const refused = classify({
  status: null,
  headers: {},
  body: null,
  transport: { code: "ECONNREFUSED", message: "connect ECONNREFUSED 127.0.0.1:9" },
  phase: "connect",
});
const missingModel = classify({
  status: 404,
  headers: {},
  body: { error: { message: "The model `echo` does not exist", code: "model_not_found" } },
});
const badKey = classify({
  status: 401,
  headers: {},
  body: { error: { message: "Incorrect API key provided", code: "invalid_api_key" } },
});

/** A primary that answers and a fallback whose one call failed with `error` a minute ago. */
async function fallbackThatFailedOnce(error: ClassifiedError, probe: "connect" | "models") {
  const main = await startSimulator();
  const backup = await startSimulator();
  afterThisTest(() => main.close());
  afterThisTest(() => backup.close());
  const s = await providerMonitor({
    model: { provider: "main", name: "echo" },
    providers: {
      main: { type: "simulator", base_url: main.url },
      backup: { type: "openai", base_url: backup.url, api_keys: ["sk-backup-key-123456"] },
    },
    fallback: [{ provider: "backup", name: "echo" }],
    health: { provider_probe: probe, provider_probe_interval: 0.2 },
  });
  const failedAt = Date.now() - 60_000;
  s.recorder.observeCall({ provider: "backup", model: "echo", at: failedAt, ok: false, error });
  s.recorder.observeCall({ provider: "main", model: "echo", at: Date.now(), ok: true });
  const backupOf = async () => (await s.providers()).providers.find((p) => p.provider === "backup");
  return { ...s, main, backup, failedAt, backupOf };
}

describe("a probe that gets through, after a failed call", () => {
  it("clears a call that could not connect once the connect probe reaches it, and says since when", async () => {
    const s = await fallbackThatFailedOnce(refused, "connect");
    expect(refused.reason).toBe("unreachable");
    expect((await s.providers()).status).toBe("degraded");
    expect((await s.backupOf())?.status).toBe("degraded");
    s.monitor.start();
    await s.monitor.providersReady;
    // Nobody calls the fallback while the primary answers: the probe's word is the latest.
    expect(await s.backupOf()).toMatchObject({ status: "ok", last_error: null, next: null });
    expect((await s.backupOf())?.detail).toMatch(
      new RegExp(
        `^the probe reached it \\d+ s ago, since the failed call to echo at ${new Date(s.failedAt).toISOString().replace(/\./g, "\\.")} \\(1 min(?: \\d+ s)? ago: unreachable, could not connect to .*\\); a probe sees that kind of failure`,
      ),
    );
    expect((await s.providers()).status).toBe("ok");
    await until(async () => (await s.monitor.report()).status === "ok");
    // Written at once (a change of state), so `tenax status` with no gateway says the same.
    await until(async () => providerCondition(await readProviderRecord(s.store, "backup"), false) === "ok");
    expect(s.backup.requests()).toEqual([]);
  });

  it("clears a refused key once the models probe gets an answer with the key a call would send", async () => {
    const s = await fallbackThatFailedOnce(badKey, "models");
    expect(badKey.reason).toBe("auth");
    s.monitor.start();
    await s.monitor.providersReady;
    expect((await s.backupOf())?.status).toBe("ok");
    expect((await s.backupOf())?.detail).toMatch(
      /^the probe had its model list answer the key \d+ s ago, since the failed call/,
    );
    expect(s.backup.requests().map((r) => [r.method, r.path])).toEqual([["GET", "/v1/models"]]);
  });

  it("does not clear a refused key with a connect, nor a missing model with any probe: they stand, and say so", async () => {
    const keyed = await fallbackThatFailedOnce(badKey, "connect");
    keyed.monitor.start();
    await keyed.monitor.providersReady;
    expect((await keyed.backupOf())?.status).toBe("degraded");
    expect((await keyed.backupOf())?.detail).toMatch(
      /the probe reached it \d+ s ago, which does not show a failure of this kind \(auth\) to be over, so it stands$/,
    );
    expect((await keyed.backupOf())?.next).toContain(
      "the next call that succeeds clears it, since the connect probe (health.provider_probe) cannot see a failure of this kind (auth); tenax status shows it",
    );

    const s = await fallbackThatFailedOnce(missingModel, "models");
    expect(missingModel.reason).toBe("model_not_found");
    s.monitor.start();
    await s.monitor.providersReady;
    expect(s.backup.requests().map((r) => r.path)).toEqual(["/v1/models"]);
    expect(await s.backupOf()).toMatchObject({
      status: "degraded",
      last_error: { reason: "model_not_found", source: "call" },
    });
    expect((await s.backupOf())?.detail).toContain(
      "which does not show a failure of this kind (model_not_found) to be over",
    );
    expect((await s.backupOf())?.next).toContain(
      "since the models probe (health.provider_probe) cannot see a failure of this kind (model_not_found)",
    );
    expect((await s.providers()).status).toBe("degraded");
    // A call that succeeds is what clears it.
    s.recorder.observeCall({ provider: "backup", model: "echo", at: Date.now(), ok: true });
    expect((await s.backupOf())?.status).toBe("ok");
  });
});

describe("the probe never throws, and the start waits for it at most a second", () => {
  it("a key that cannot be looked up makes the look a connect with the reason, and the first look still settles", async () => {
    const sim = await startSimulator();
    afterThisTest(() => sim.close());
    const s = await providerMonitor(
      {
        model: { provider: "main", name: "echo" },
        providers: { main: { type: "openai", base_url: sim.url, api_keys: ["sk-main-key-123456"] } },
        health: { provider_probe: "models" },
      },
      {
        keyOf: async () => {
          throw new Error("the key ledger could not be read: database is locked");
        },
      },
    );
    s.monitor.start();
    await expect(s.monitor.providersReady).resolves.toBeUndefined();
    await expect(s.monitor.firstProviderLook()).resolves.toBeUndefined();
    // The host answers: the store's failure is the store component's to tell, not the provider's.
    expect((await s.providers()).providers[0]?.status).toBe("ok");
    expect(s.recorder.view().get("main")?.last_probe).toMatchObject({
      ok: true,
      scope: "reach",
      message: expect.stringMatching(
        /^its key could not be looked up \(the key ledger could not be read: database is locked\), so a connect instead: connected to 127\.0\.0\.1:\d+/,
      ),
    });
    // No request without the key: a connect only.
    expect(sim.requests()).toEqual([]);
  });

  it("a provider that takes no connection: the first look is waited on for a second, unknown meanwhile, then down when its deadline ends", async () => {
    const hole = await blackHole();
    const s = await providerMonitor({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "openai", base_url: hole.url } },
      health: { provider_probe: "connect", provider_probe_timeout: 3 },
    });
    let settled = false;
    const started = Date.now();
    s.monitor.start();
    void s.monitor.providersReady.then(() => {
      settled = true;
    });
    await s.monitor.firstProviderLook();
    const waited = Date.now() - started;
    console.log(`first provider look waited ${waited} ms (limit ${FIRST_PROVIDER_LOOK_MS} ms)`);
    expect(FIRST_PROVIDER_LOOK_MS).toBe(1000);
    expect(waited).toBeGreaterThanOrEqual(FIRST_PROVIDER_LOOK_MS - 5);
    // Far below the probe's 3 s deadline: the look is still under way, and not waited on.
    expect(waited).toBeLessThan(2500);
    expect(settled).toBe(false);
    const main = (await s.providers()).providers.find((p) => p.provider === "main");
    expect(main).toMatchObject({ status: "unknown", last_error: null });
    expect(main?.detail).toBe("not called yet, and the background probe has not reached it yet");
    // Not seen yet is no fault seen: the whole is not degraded by it.
    expect((await s.providers()).status).toBe("unknown");
    await until(async () => (await s.monitor.report()).components.store?.status === "ok");
    expect((await s.monitor.report()).status).toBe("ok");

    await s.monitor.providersReady;
    expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    expect((await s.providers()).providers.find((p) => p.provider === "main")).toMatchObject({
      status: "down",
      last_error: { source: "probe", reason: "timeout", message: "no answer within 3 s" },
    });
  });
});
