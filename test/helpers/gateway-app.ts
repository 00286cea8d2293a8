// The gateway's whole app (chat completions, the Responses API, runs and the rest) over a real agent,
// store and simulator, in this process on 127.0.0.1 port 0; all of it closed after each test.
import { randomBytes } from "node:crypto";
import { afterEach } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { configSchema } from "../../src/config/schema.js";
import { buildGatewayApp } from "../../src/gateway/app.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { closeApp, listen } from "../../src/http/listen.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import { tempDir, tempProfile } from "./tmp.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export interface GatewayApp {
  url: string;
  key: string;
  sim: Simulator;
  store: Store;
  gateway: Gateway;
}

/** `config` is merged over the profile's config (its gateway section over the key, providers.sim over the simulator's). */
export async function startGatewayApp(
  config: Record<string, Record<string, unknown>> = {},
): Promise<GatewayApp> {
  const sim = await startSimulator();
  cleanups.push(() => sim.close());
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  cleanups.push(() => releaseStore(store));
  const key = `tk-${randomBytes(12).toString("hex")}`;
  const parsed = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    retry: { max_attempts: 1 },
    ...config,
    // The simulator's provider keeps its URL; `config.providers.sim` may set the rest (its keys).
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        api_keys: ["sk-test"],
        ...(config.providers?.sim as object | undefined),
      },
    },
    gateway: { api_key: key, ...config.gateway },
  });
  const agent = await Agent.create({ paths, config: parsed, store });
  cleanups.push(() => agent.close());
  let at: { host: string; port: number } | null = null;
  const gateway = new Gateway({ agent, store, config: parsed, cwd: tempDir("tenax-project-") });
  const app = buildGatewayApp({
    gateway,
    agent,
    store,
    config: parsed,
    version: "test",
    listening: () => at,
  });
  const port = await listen(app, "127.0.0.1", 0, { name: "gateway", hint: "" });
  at = { host: "127.0.0.1", port };
  cleanups.push(async () => {
    await gateway.interruptAll();
    await closeApp(app);
  });
  return { url: `http://127.0.0.1:${at.port}`, key, sim, store, gateway };
}
