// Provider health from outside, against a real `tenax gateway run` whose provider is a port nothing
// listens on: after a turn fails, /health says the providers are down with the classified reason and
// the next command, /metrics shows it, `tenax status` exits 2 naming the provider; with a fallback
// that answers it is degraded and exit 1; a provider that comes back is ok after a turn that
// succeeds. A provider never called is unknown with the probe off, and ok once the probe reaches it.
// A fallback that failed once while the primary was down is ok again once the probe reaches it,
// though nobody calls it; and a provider that takes no connection never holds the start back.
import { writeFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { classify } from "../src/llm/classify.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { blackHole } from "./helpers/black-hole.js";
import { requireBuild, tenaxAsync, testGatewayKey } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

interface ProviderView {
  provider: string;
  status: string;
  detail: string;
  next: string | null;
  last_error: { reason: string; message: string | null; at: number; source: string } | null;
}
interface Health {
  status: string;
  components: Record<
    string,
    { status: string; detail: string; next: string | null; providers?: ProviderView[] }
  >;
}

/** What the classifier names a refused connection (today server_error; the reason may be renamed). */
const REFUSED = classify({
  status: null,
  headers: {},
  body: null,
  transport: { code: "ECONNREFUSED", message: "connect ECONNREFUSED" },
  phase: "connect",
}).reason;

/** A profile whose primary provider is `base_url`, the gateway behind a key (from the profile's .env). */
function profile(providers: string, extra = "") {
  const paths = profileWith(
    `model: { provider: main, name: echo }\nproviders:\n${providers}\nretry: { max_attempts: 1 }\ngateway: { api_key: "\${TENAX_API_KEY}", drain_timeout: 1 }\n${extra}`,
  );
  // The key every tenax child of this home gets; in .env too, as a first start would write it.
  const key = testGatewayKey(paths.home);
  writeFileSync(paths.env, `TENAX_API_KEY=${key}\n`, { mode: 0o600 });
  const headers = { authorization: `Bearer ${key}` };
  return { paths, home: paths.home, headers };
}

async function turn(url: string, headers: Record<string, string>, content: string) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });
  return { status: response.status, text: await response.text() };
}

async function health(url: string, headers: Record<string, string>): Promise<Health> {
  return (await (await fetch(`${url}/health`, { headers })).json()) as Health;
}

const providersOf = (h: Health) =>
  h.components.providers as Health["components"][string] & { providers: ProviderView[] };

const sims: Simulator[] = [];
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

async function simulatorOn(port = 0): Promise<Simulator> {
  const sim = await startSimulator({ port });
  sims.push(sim);
  return sim;
}

describe("provider health through a real gateway", () => {
  it("a refused provider: down after a failed turn on /health, /metrics and tenax status (exit 2); ok after a turn once it is back", async () => {
    const port = await freePort();
    const { home, headers } = profile(
      `  main: { type: openai, base_url: "http://127.0.0.1:${port}/v1" }`,
      "health: { provider_probe: off }",
    );
    const gw = await startGateway(home);
    // Nobody has called it and the probe is off: unknown, which is no fault of its own.
    let h = await health(gw.url, headers);
    expect(providersOf(h).status).toBe("unknown");

    await turn(gw.url, headers, "this turn meets a closed port");
    h = await health(gw.url, headers);
    expect(h.status).toBe("down");
    const providers = providersOf(h);
    expect(providers.status).toBe("down");
    expect(providers.detail).toMatch(/^no model of the primary-and-fallback chain answers/);
    const main = providers.providers.find((p) => p.provider === "main");
    expect(main?.status).toBe("down");
    expect(main?.last_error).toMatchObject({ reason: REFUSED, source: "call" });
    expect(main?.last_error?.message).toContain(
      `could not connect to http://127.0.0.1:${port}/v1 (connection refused)`,
    );
    expect(Math.abs((main?.last_error?.at ?? 0) - Date.now())).toBeLessThan(30_000);
    expect(providers.next).toContain(`curl -sS http://127.0.0.1:${port}/v1/models`);
    expect(providers.next).toContain("tenax status");
    expect((await fetch(`${gw.url}/health`, { headers })).status).toBe(503);

    const metrics = await (await fetch(`${gw.url}/metrics`, { headers })).text();
    expect(metrics).toContain('tenax_component_status{component="providers"} 2');
    expect(metrics).toContain('tenax_provider_status{provider="main"} 2');
    expect(metrics).toContain(`tenax_provider_call_failures_total{provider="main",reason="${REFUSED}"} 1`);
    expect(metrics).toContain('tenax_provider_calls_total{provider="main",outcome="failed"} 1');

    const status = await tenaxAsync(home, ["status"]);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(/^Tenax profile 'default': down \(providers down\)/);
    expect(status.stdout).toMatch(
      /^ {2}providers\s+down\s+no model of the primary-and-fallback chain answers/m,
    );
    expect(status.stdout).toMatch(
      new RegExp(
        `main \\(openai, http://127\\.0\\.0\\.1:${port}/v1\\): down, a call to echo failed \\d+ s ago: ${REFUSED}`,
      ),
    );
    expect(status.stdout).toContain("next (providers): check that main at");
    const json = JSON.parse((await tenaxAsync(home, ["status", "--json"])).stdout);
    expect(json.components.providers.providers[0]).toMatchObject({ provider: "main", status: "down" });
    expect(json.components.gateway.status).toBe("ok");

    // The provider comes back on that port; the next turn starts on it and its success clears it.
    const sim = await simulatorOn(port);
    const back = await turn(gw.url, headers, "and now it answers");
    expect(back.status).toBe(200);
    expect(back.text).toContain("echo: and now it answers");
    expect(sim.requests().filter((r) => r.path === "/v1/chat/completions")).toHaveLength(1);
    h = await health(gw.url, headers);
    expect(providersOf(h).status).toBe("ok");
    expect(providersOf(h).providers[0]).toMatchObject({ status: "ok", last_error: null });
    expect(h.status).toBe("ok");
    const again = await tenaxAsync(home, ["status"]);
    expect(again.stdout).toMatch(/^ {2}providers\s+ok\s+/m);
    expect(again.status).toBe(0);
    expect(await (await fetch(`${gw.url}/metrics`, { headers })).text()).toContain(
      'tenax_provider_status{provider="main"} 0',
    );
  });

  it("with a fallback that answers, the refused primary is degraded, and tenax status exits 1 naming it", async () => {
    const backup = await simulatorOn();
    const port = await freePort();
    const { home, headers } = profile(
      `  main: { type: openai, base_url: "http://127.0.0.1:${port}/v1" }\n  backup: { type: simulator, base_url: "${backup.url}" }`,
      "fallback: [{ provider: backup, name: echo }]\nhealth: { provider_probe: off }",
    );
    const gw = await startGateway(home);
    const answered = await turn(gw.url, headers, "the fallback answers this one");
    expect(answered.status).toBe(200);
    expect(answered.text).toContain("echo: the fallback answers this one");
    const h = await health(gw.url, headers);
    const providers = providersOf(h);
    expect(providers.status).toBe("degraded");
    expect(providers.providers.map((p) => [p.provider, p.status])).toEqual([
      ["main", "degraded"],
      ["backup", "ok"],
    ]);
    expect(providers.providers[0]?.last_error?.reason).toBe(REFUSED);
    expect(h.status).toBe("degraded");
    expect(await (await fetch(`${gw.url}/metrics`, { headers })).text()).toContain(
      'tenax_provider_status{provider="main"} 1',
    );
    const status = await tenaxAsync(home, ["status"]);
    expect(status.status).toBe(1);
    expect(status.stdout).toMatch(/^Tenax profile 'default': degraded \(providers degraded\)/);
    expect(status.stdout).toMatch(/providers\s+degraded\s+main failing, the rest of the chain still answers/);
  });

  it("what a failed tenax chat saw is what tenax status says, with no gateway running", async () => {
    const port = await freePort();
    const { home } = profile(`  main: { type: openai, base_url: "http://127.0.0.1:${port}/v1" }`);
    await tenaxAsync(home, ["chat", "-q", "is anyone there?"]);
    const status = await tenaxAsync(home, ["status", "--json"]);
    expect(status.status).toBe(2);
    const report = JSON.parse(status.stdout);
    expect(report.components.gateway.status).toBe("down");
    expect(report.components.providers.status).toBe("down");
    expect(report.components.providers.providers[0]).toMatchObject({
      provider: "main",
      status: "down",
      last_error: { reason: REFUSED, source: "call", model: "echo" },
    });
  });

  it("a provider never called: unknown with the probe off; with the probe on, down while nothing listens and ok once it answers, without a call", async () => {
    const sim = await simulatorOn();
    const off = profile(
      `  main: { type: simulator, base_url: "${sim.url}" }`,
      "health: { provider_probe: off }",
    );
    const quiet = await startGateway(off.home);
    await new Promise((r) => setTimeout(r, 1500));
    const h = await health(quiet.url, off.headers);
    expect(providersOf(h).status).toBe("unknown");
    expect(providersOf(h).providers[0]?.detail).toContain("health.provider_probe: off");
    const status = await tenaxAsync(off.home, ["status"]);
    // Unknown is said, and is no failure: nothing was seen to fail.
    expect(status.stdout).toMatch(/^Tenax profile 'default': ok \(providers unknown\)/);
    expect(status.stdout).toMatch(/^ {2}providers\s+unknown\s+/m);
    expect(status.status).toBe(0);

    const port = await freePort();
    const on = profile(
      `  main: { type: simulator, base_url: "http://127.0.0.1:${port}/v1" }`,
      "health: { provider_probe: connect, provider_probe_interval: 0.5 }",
    );
    const probed = await startGateway(on.home);
    // The first probe ends before the port opens: /health never starts out on a guess.
    const first = providersOf(await health(probed.url, on.headers));
    expect(first.status).toBe("down");
    expect(first.providers[0]?.last_error).toMatchObject({ source: "probe", reason: REFUSED });
    const later = await simulatorOn(port);
    const deadline = Date.now() + 10_000;
    let now = first;
    while (now.status !== "ok" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      now = providersOf(await health(probed.url, on.headers));
    }
    expect(now.status).toBe("ok");
    expect(now.providers[0]?.detail).toMatch(/reached by the probe \d+ s ago, not called yet/);
    // A connect costs the provider nothing: no request reached it.
    expect(later.requests()).toEqual([]);
    expect(sim.requests()).toEqual([]);
  });

  it("a fallback that failed once while the primary was down is ok again once the probe reaches it, with no call to it", async () => {
    const mainPort = await freePort();
    const backupPort = await freePort();
    const { home, headers } = profile(
      `  main: { type: openai, base_url: "http://127.0.0.1:${mainPort}/v1" }\n  backup: { type: simulator, base_url: "http://127.0.0.1:${backupPort}/v1" }`,
      "fallback: [{ provider: backup, name: echo }]\nhealth: { provider_probe: connect, provider_probe_interval: 0.5 }",
    );
    const gw = await startGateway(home);
    // Both down: the turn fails on the primary, then on the fallback.
    expect((await turn(gw.url, headers, "nobody answers this one")).status).toBe(502);
    let providers = providersOf(await health(gw.url, headers));
    expect(providers.providers.map((p) => [p.provider, p.status, p.last_error?.source])).toEqual([
      ["main", "down", "call"],
      ["backup", "down", "call"],
    ]);
    // Both come back; the primary answers the next turn, and nobody calls the fallback again.
    await simulatorOn(mainPort);
    const backup = await simulatorOn(backupPort);
    expect((await turn(gw.url, headers, "the primary is back")).status).toBe(200);
    const deadline = Date.now() + 10_000;
    do {
      providers = providersOf(await health(gw.url, headers));
      if (providers.status === "ok") break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
    expect(providers.providers.map((p) => [p.provider, p.status])).toEqual([
      ["main", "ok"],
      ["backup", "ok"],
    ]);
    expect(providers.providers[1]?.detail).toMatch(
      new RegExp(
        `^the probe reached it \\d+ s ago, since the failed call to echo at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z \\(\\d+ s ago: ${REFUSED}, could not connect to http://127\\.0\\.0\\.1:${backupPort}/v1`,
      ),
    );
    expect(providers.status).toBe("ok");
    const status = await tenaxAsync(home, ["status"]);
    expect(status.stdout).toMatch(/^ {2}providers\s+ok\s+/m);
    expect(status.status).toBe(0);
    // A connect costs the fallback nothing: no request reached it.
    expect(backup.requests()).toEqual([]);
  });

  it("a provider that takes no connection holds the start back at most a second: unknown on the first /health, nothing degraded", async () => {
    const hole = await blackHole();
    const { home, headers } = profile(
      `  main: { type: openai, base_url: "${hole.url}" }`,
      // A look that would hold the port closed for 30 s if the start waited for it to end.
      "health: { provider_probe: connect, provider_probe_timeout: 30 }",
    );
    const started = Date.now();
    const gw = await startGateway(home);
    const took = Date.now() - started;
    console.log(`gateway listening ${took} ms after its start, its provider black-holed`);
    expect(took).toBeLessThan(10_000);
    const first = providersOf(await health(gw.url, headers));
    expect(first.providers[0]).toMatchObject({ provider: "main", status: "unknown", last_error: null });
    expect(first.providers[0]?.detail).toBe(
      "not called yet, and the background probe has not reached it yet",
    );
    expect(first.status).toBe("unknown");
    // Not seen yet is no fault: the whole is ok once the store's first check is in.
    let h = await health(gw.url, headers);
    const deadline = Date.now() + 5000;
    while (h.status !== "ok" && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      h = await health(gw.url, headers);
    }
    expect(h.status).toBe("ok");
    expect(providersOf(h).status).toBe("unknown");
    expect(gw.stdout()).toContain("gateway listening on");
  });
});
