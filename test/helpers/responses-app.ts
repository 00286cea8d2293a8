// A Fastify app serving the Responses routes beside today's gateway handler (mounted as a catch-all
// route, as the gateway app will mount its routes), over a real agent, store and simulator, on
// 127.0.0.1 port 0; all of it closed after each test. The app's bearer check is the gateway's own
// (its handler answers 401 to the chat call); for GET and DELETE a hook here asks the same key.
import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import { afterEach } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { configSchema } from "../../src/config/schema.js";
import { newId } from "../../src/core/ids.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { registerResponsesRoutes } from "../../src/gateway/responses/routes.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import { tempDir, tempProfile } from "./tmp.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export interface ResponsesApp {
  url: string;
  key: string;
  sim: Simulator;
  store: Store;
  gateway: Gateway;
}

export async function startResponsesApp(): Promise<ResponsesApp> {
  const sim = await startSimulator();
  cleanups.push(() => sim.close());
  const paths = tempProfile();
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  cleanups.push(() => releaseStore(store));
  const key = `tk-${randomBytes(12).toString("hex")}`;
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: { sim: { type: "simulator", base_url: sim.url, api_keys: ["sk-test"] } },
    retry: { max_attempts: 1 },
    gateway: { api_key: key },
  });
  const agent = await Agent.create({ paths, config, store });
  cleanups.push(() => agent.close());
  let at: { host: string; port: number } | null = null;
  const gateway = new Gateway({
    agent,
    store,
    config,
    version: "test",
    cwd: tempDir("tenax-project-"),
    listening: () => at,
  });

  const app = Fastify();
  registerResponsesRoutes(app, { store, newId: (prefix) => newId(prefix) });
  app.addHook("onRequest", async (request, reply) => {
    if (!request.url.startsWith("/v1/responses/")) return;
    if (request.headers.authorization === `Bearer ${key}`) return;
    await reply
      .code(401)
      .send({ error: { message: "wrong key", type: "authentication_error", code: "invalid_api_key" } });
  });
  // Today's gateway handler takes every other route, reading its own body.
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null));
    scope.all("/*", (request, reply) => {
      reply.hijack();
      gateway.handle(request.raw, reply.raw);
    });
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  at = { host: "127.0.0.1", port: (app.server.address() as AddressInfo).port };
  cleanups.push(async () => {
    await gateway.interruptAll();
    await app.close();
  });
  return { url: `http://127.0.0.1:${at.port}`, key, sim, store, gateway };
}
