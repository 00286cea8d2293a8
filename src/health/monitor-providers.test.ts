// The gateway monitor's providers component, in-process over a real store, real sockets and the
// real probe: unknown until the probe sees a provider answer, down with the reason and the next
// command when it cannot be reached, ok again when it answers, unknown for good with the probe off,
// and the `models` probe sends the key and costs no call.
import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { freePort } from "../../test/helpers/dashboard.js";
import {
  afterThisTest,
  listenOn,
  providerMonitor as setup,
  until,
  wait,
} from "../../test/helpers/provider-monitor.js";
import { classify } from "../llm/classify.js";
import { startSimulator } from "../llm/simulator/server.js";
import { newCounters, renderMetrics } from "./metrics.js";
import { worst } from "./status.js";

describe("HealthMonitor: providers", () => {
  it("a provider never called is unknown until the probe sees it answer, then ok; the whole is not degraded meanwhile", async () => {
    // A server that takes its time to answer GET /models: the probe is under way meanwhile.
    let answer: () => void = () => {};
    const seen: string[] = [];
    const slow = createServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? "(no key)"}`);
      answer = () => res.writeHead(200, { "content-type": "application/json" }).end('{"data":[]}');
    });
    const port = await listenOn(slow);
    const s = await setup({
      model: { provider: "main", name: "m" },
      providers: { main: { type: "openai", base_url: `http://127.0.0.1:${port}/v1` } },
      health: { provider_probe: "models", provider_probe_interval: 60 },
    });
    s.monitor.start();
    await until(async () => (await s.monitor.report()).components.store?.status === "ok");
    expect((await s.providers()).status).toBe("unknown");
    expect((await s.providers()).providers[0]).toMatchObject({
      provider: "main",
      status: "unknown",
      last_error: null,
    });
    expect((await s.providers()).detail).toContain("the background probe has not reached it yet");
    // Unknown is no fault seen: the providers do not lower the whole. (A loaded machine may lower
    // it through the scheduler's lag, which is not what this checks.)
    const report = await s.monitor.report();
    const others = Object.entries(report.components).filter(([name]) => name !== "providers");
    expect(report.status).toBe(worst(others.map(([, c]) => c.status)));
    // The request has arrived (on a loaded machine it may come after the store's first check).
    await until(() => seen.length > 0);
    answer();
    await s.monitor.providersReady;
    expect((await s.providers()).status).toBe("ok");
    expect((await s.providers()).providers[0]?.detail).toMatch(
      /reached by the probe \d+ s ago, not called yet/,
    );
    // A server that needs no key (api_keys left out) is not sent one.
    expect(s.keys).toEqual([]);
    expect(seen).toEqual(["GET /v1/models (no key)"]);
  });

  it("a provider nothing listens for is down with the reason and the next command; it is ok once it answers", async () => {
    const port = await freePort();
    const s = await setup({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: `http://127.0.0.1:${port}/v1` } },
      health: { provider_probe: "connect", provider_probe_interval: 0.2 },
    });
    s.monitor.start();
    await s.monitor.providersReady;
    const down = await s.providers();
    expect(down.status).toBe("down");
    expect(down.detail).toMatch(/^no model of the primary-and-fallback chain answers/);
    const main = down.providers[0];
    expect(main?.status).toBe("down");
    expect(main?.last_error).toMatchObject({
      source: "probe",
      message: expect.stringMatching(
        /could not connect to http:\/\/127\.0\.0\.1:\d+.* \(connection refused\)/,
      ),
    });
    // The classifier's reason, whatever it names a refused connection.
    expect(main?.last_error?.reason).toBe(
      classify({ status: null, headers: {}, body: null, transport: { code: "ECONNREFUSED", message: "x" } })
        .reason,
    );
    expect(down.next).toContain(`curl -sS http://127.0.0.1:${port}/v1/models`);
    expect(down.next).toContain("tenax status");
    expect((await s.monitor.report()).status).toBe("down");
    const metrics = renderMetrics(
      await s.monitor.report(),
      newCounters(),
      [],
      { turns_in_flight: 0, event_clients: 0, started_at: 0 },
      s.monitor.providerCounters(),
    );
    expect(metrics).toContain('tenax_provider_status{provider="main"} 2');
    expect(metrics).toMatch(/tenax_provider_probes_total\{provider="main",outcome="failed"\} [1-9]/);

    // The provider comes up: the next probe sees it, no call needed (and none made: no tokens).
    const sim = await startSimulator({ port });
    afterThisTest(() => sim.close());
    await until(async () => (await s.providers()).status === "ok");
    expect((await s.providers()).providers[0]).toMatchObject({ status: "ok", last_error: null });
    expect(sim.requests()).toEqual([]);
  });

  it("with the probe off, a provider never called stays unknown, and the status says why", async () => {
    const sim = await startSimulator();
    afterThisTest(() => sim.close());
    const s = await setup({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "simulator", base_url: sim.url } },
      health: { provider_probe: "off" },
    });
    s.monitor.start();
    await s.monitor.providersReady;
    await wait(300);
    expect((await s.providers()).status).toBe("unknown");
    expect((await s.providers()).providers[0]?.detail).toContain("health.provider_probe: off");
    expect((await s.monitor.report()).status).toBe("ok");
    expect(sim.requests()).toEqual([]);
    // A call's end is what makes it known.
    s.recorder.observeCall({ provider: "main", model: "echo", at: Date.now(), ok: true });
    expect((await s.providers()).status).toBe("ok");
  });

  it("calls decide: failing with a fallback answering is degraded, both failing is down, a success is ok", async () => {
    const sim = await startSimulator();
    afterThisTest(() => sim.close());
    const s = await setup({
      model: { provider: "main", name: "m" },
      providers: {
        main: {
          type: "openai",
          base_url: `http://127.0.0.1:${await freePort()}/v1`,
          api_keys: ["sk-main-123456"],
        },
        backup: { type: "simulator", base_url: sim.url },
      },
      fallback: [{ provider: "backup", name: "echo" }],
      health: { provider_probe: "off" },
    });
    s.monitor.start();
    // Every other layer checked once: what changes below is the providers' doing.
    await until(async () => (await s.monitor.report()).status === "ok");
    const refused = classify({
      status: null,
      headers: {},
      body: null,
      transport: { code: "ECONNREFUSED", message: "connect ECONNREFUSED" },
    });
    const at = Date.now();
    s.recorder.observeCall({ provider: "main", model: "m", at, ok: false, error: refused });
    s.recorder.observeCall({ provider: "backup", model: "echo", at: at + 1, ok: true });
    expect((await s.providers()).status).toBe("degraded");
    expect((await s.providers()).providers.map((p) => p.status)).toEqual(["degraded", "ok"]);
    expect((await s.providers()).next).toContain("main");
    expect((await s.monitor.report()).status).toBe("degraded");
    s.recorder.observeCall({ provider: "backup", model: "echo", at: at + 2, ok: false, error: refused });
    expect((await s.providers()).status).toBe("down");
    s.recorder.observeCall({ provider: "main", model: "m", at: at + 3, ok: true });
    expect((await s.providers()).providers.map((p) => p.status)).toEqual(["ok", "degraded"]);
    s.recorder.observeCall({ provider: "backup", model: "echo", at: at + 4, ok: true });
    expect((await s.providers()).status).toBe("ok");
    expect((await s.monitor.report()).status).toBe("ok");
  });

  it("a call that met the gateway's own EMFILE makes the gateway degraded with the fix, and leaves the provider alone", async () => {
    const s = await setup({
      model: { provider: "main", name: "m" },
      providers: { main: { type: "openai", base_url: "http://127.0.0.1:9/v1" } },
      health: { provider_probe: "off" },
    });
    s.monitor.start();
    await until(async () => (await s.monitor.report()).components.store?.status === "ok");
    const at = Date.now();
    s.recorder.observeCall({ provider: "main", model: "m", at, ok: true });
    const emfile = classify({
      status: null,
      headers: {},
      body: null,
      transport: { code: "EMFILE", message: "connect EMFILE 127.0.0.1:9 - Local (undefined:undefined)" },
      phase: "connect",
      endpoint: "http://127.0.0.1:9/v1",
    });
    s.recorder.observeCall({ provider: "main", model: "m", at: at + 1, ok: false, error: emfile });
    const report = await s.monitor.report();
    expect(report.components.providers?.status).toBe("ok");
    expect(report.components.gateway).toMatchObject({ status: "degraded" });
    expect(report.components.gateway?.detail).toMatch(
      /^\d+ s ago this process could not open a connection to main \(a call\): Tenax's own process is out of file descriptors \(EMFILE\)/,
    );
    expect(report.components.gateway?.next).toMatch(
      new RegExp(`^raise the gateway's open-file limit .*: ls /proc/${process.pid}/fd \\| wc -l$`),
    );
  });

  it("the models probe sends the configured key, and no model call", async () => {
    const sim = await startSimulator();
    afterThisTest(() => sim.close());
    const s = await setup({
      model: { provider: "main", name: "echo" },
      providers: { main: { type: "openai", base_url: sim.url, api_keys: ["sk-probe-key-123456"] } },
      health: { provider_probe: "models" },
    });
    s.monitor.start();
    await s.monitor.providersReady;
    expect((await s.providers()).status).toBe("ok");
    expect(s.keys).toEqual(["main"]);
    expect(sim.requests().map((r) => [r.method, r.path, r.headers.authorization])).toEqual([
      ["GET", "/v1/models", "Bearer sk-probe-key-123456"],
    ]);
  });
});
