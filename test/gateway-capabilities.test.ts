// GET /api/capabilities says exactly what the gateway serves, in-process (Fastify inject) over a
// real agent, store, simulator and health monitor: wired as `tenax gateway run` wires it, every
// capability listed answers on its route and every route the app registered belongs to a listed
// capability (jobs and platforms were served but not listed); wired without runs, cron and health,
// those are neither listed nor served; and a route of no family stops the app from being built.
import { afterEach, describe, expect, it } from "vitest";
import { openAgent } from "../src/agent/setup.js";
import { configSchema } from "../src/config/schema.js";
import { CronJobs } from "../src/cron/jobs.js";
import { buildGatewayApp } from "../src/gateway/app.js";
import { Gateway } from "../src/gateway/gateway.js";
import { gatewayLog, startObservability } from "../src/gateway/observability.js";
import { checkCapabilities, FAMILIES, under } from "../src/gateway/routes/capabilities.js";
import { RunRegistry } from "../src/gateway/runs.js";
import { probeLayers } from "../src/health/layer-probe.js";
import { type App, createApp, registeredRoutes } from "../src/http/app.js";
import { startSimulator } from "../src/llm/simulator/server.js";
import { tempProfile } from "./helpers/tmp.js";

const KEY = "capabilities-key";
const auth = { authorization: `Bearer ${KEY}` };

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function gatewayApp(wired: boolean): Promise<App> {
  const sim = await startSimulator();
  cleanups.push(() => sim.close());
  const paths = tempProfile();
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: { sim: { type: "simulator", base_url: sim.url } },
    gateway: { api_key: KEY },
  });
  const opened = await openAgent(paths, config, { storeSettings: { integrityCheckTimeoutMs: 0 } });
  cleanups.push(() => opened.close());
  const gateway = new Gateway({ agent: opened.agent, store: opened.store, config, cwd: process.cwd() });
  if (!wired) {
    const app = buildGatewayApp({ gateway, agent: opened.agent, store: opened.store, config, version: "t" });
    cleanups.push(() => app.close());
    return app;
  }
  const log = gatewayLog(paths, config);
  const observed = startObservability({
    paths,
    config,
    store: opened.store,
    scheduler: opened.agent.scheduler,
    log,
    layers: () => probeLayers(paths, config, Date.now()),
    gateway: () => ({ stopping: false, turnsInFlight: 0, maxTurns: 4, startedAt: Date.now(), address: null }),
  });
  cleanups.push(async () => {
    await observed.close();
    log.close();
  });
  const runs = new RunRegistry({ store: opened.store, gateway });
  const jobs = new CronJobs(opened.store, { timezone: "UTC" });
  const app = buildGatewayApp({
    gateway,
    agent: opened.agent,
    store: opened.store,
    config,
    version: "t",
    health: observed.routes,
    runs,
    cron: { jobs },
  });
  cleanups.push(async () => {
    await runs.settled();
    await app.close();
  });
  return app;
}

async function listed(app: App): Promise<string[]> {
  const response = await app.inject({ method: "GET", url: "/api/capabilities", headers: auth });
  expect(response.statusCode).toBe(200);
  return (response.json() as { capabilities: string[] }).capabilities;
}

/** How the route that serves a family answers (headers only: /api/events is a stream that stays open). */
async function answer(
  app: App,
  method: string,
  url: string,
): Promise<{ status: number; code: string | null }> {
  const response = await app.inject({
    method: method as "GET" | "POST",
    url,
    headers: { ...auth, "content-type": "application/json" },
    ...(method === "POST" ? { payload: "{}" } : {}),
    payloadAsStream: true,
  });
  const stream = response.stream();
  let text = "";
  if (response.headers["content-type"]?.toString().startsWith("application/json"))
    for await (const chunk of stream) text += String(chunk);
  stream.destroy();
  const code = text === "" ? null : ((JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null);
  return { status: response.statusCode, code };
}

describe("GET /api/capabilities", () => {
  it("wired as tenax gateway run wires it: lists every family it serves, jobs and platforms too, and each answers", async () => {
    const app = await gatewayApp(true);
    const capabilities = await listed(app);
    expect(capabilities).toEqual(FAMILIES.map((f) => f.name));
    expect(capabilities).toEqual(expect.arrayContaining(["jobs", "platforms", "runs", "health", "events"]));
    for (const name of capabilities) {
      const family = FAMILIES.find((f) => f.name === name);
      expect(family, name).toBeDefined();
      const got = await answer(app, family?.method ?? "", family?.url ?? "");
      // Served: the route answers (a POST with an empty body is a 400 naming what is missing).
      expect(got.status, `${name}: ${got.status} ${got.code}`).not.toBe(404);
      expect(got.status, name).not.toBe(405);
      expect(got.code, name).not.toBe("unknown_route");
      expect(got.status, name).toBeLessThan(500);
    }
    // Every route registered belongs to a family that is listed.
    for (const url of registeredRoutes(app).keys()) {
      if (url === "/api/capabilities" || url === "/health/live") continue;
      const owner = FAMILIES.find((f) => under(url, f.url));
      expect(owner, url).toBeDefined();
      expect(capabilities, url).toContain(owner?.name);
    }
  });

  it("wired without runs, cron and health: those are neither listed nor served", async () => {
    const app = await gatewayApp(false);
    const capabilities = await listed(app);
    for (const name of ["runs", "jobs", "health", "metrics", "events"]) {
      expect(capabilities).not.toContain(name);
      const family = FAMILIES.find((f) => f.name === name);
      expect((await answer(app, family?.method ?? "", family?.url ?? "")).code, name).toBe("unknown_route");
    }
    expect(capabilities).toEqual([
      "chat.completions",
      "chat.completions.stream",
      "models",
      "responses",
      "sessions",
      "platforms",
    ]);
  });

  it("a route of no family stops the app from being built", async () => {
    const app = createApp();
    cleanups.push(() => app.close());
    app.get("/v1/chat/completions", async () => ({}));
    expect(() => checkCapabilities(app)).not.toThrow();
    app.get("/api/approvals", async () => ({}));
    expect(() => checkCapabilities(app)).toThrow(/routes \/api\/approvals belong to no capability/);
  });
});
