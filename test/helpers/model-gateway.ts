// The model-gateway mode served for tests: the gateway's real app (buildGatewayApp: its key check,
// body parser, the chat route choosing the target from `model`, the Responses routes) on
// 127.0.0.1 port 0, over a real Agent whose ModelRouter is built from a config, a real store in a
// temp profile, and simulators (and an Anthropic-wire peer) over real HTTP. The agent takes fake
// time, so the router's retry backoff sleeps are recorded and skip ahead. All closed after each test.
import { randomBytes } from "node:crypto";
import OpenAI from "openai";
import { afterEach } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { configSchema } from "../../src/config/schema.js";
import { buildGatewayApp } from "../../src/gateway/app.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { closeApp, listen } from "../../src/http/listen.js";
import type { ModelRuntime } from "../../src/llm/runtime.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import type { WalFiles } from "../../src/store/wal-sync.js";
import { type AnthropicPeer, startAnthropicPeer } from "./anthropic-peer.js";
import { type FakeDeps, fakeDeps } from "./fake-time.js";
import { tempDir, tempProfile } from "./tmp.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export interface ModelGateway {
  /** The OpenAI-style base URL, `…/v1`. */
  url: string;
  /** The gateway's API key (gateway.api_key): the bearer every client sends. */
  key: string;
  /** `main` (the primary), its fallback `backup`: two simulators. */
  main: Simulator;
  backup: Simulator;
  /** The `claude` provider: Anthropic's Messages wire. */
  peer: AnthropicPeer;
  store: Store;
  runtime: ModelRuntime;
  deps: FakeDeps;
  client: OpenAI;
  /** The chat requests a simulator received, bodies parsed. */
  bodies(sim: Simulator): Record<string, unknown>[];
}

/**
 * `mainConcurrency` is the primary provider's max_concurrency (config's default otherwise);
 * `walFiles`, the file calls of the store's WAL syncs (a test that holds a sync back).
 */
export async function startModelGateway(
  options: {
    mainConcurrency?: number;
    walFiles?: WalFiles;
    /** false: no circuit breaker, so every call spends the whole retry budget. */
    breaker?: boolean;
  } = {},
): Promise<ModelGateway> {
  const main = await startSimulator();
  cleanups.push(() => main.close());
  const backup = await startSimulator();
  cleanups.push(() => backup.close());
  const peer = await startAnthropicPeer();
  cleanups.push(() => peer.close());
  const paths = tempProfile();
  const store = await openStore(paths, {
    integrityCheckTimeoutMs: 0,
    ...(options.walFiles ? { walFiles: options.walFiles } : {}),
  });
  cleanups.push(async () => releaseStore(store));
  const key = `tk-${randomBytes(12).toString("hex")}`;
  const config = configSchema.parse({
    model: { provider: "main", name: "echo" },
    providers: {
      main: {
        type: "openai",
        base_url: main.url,
        api_keys: ["sk-main-1", "sk-main-2"],
        ...(options.mainConcurrency === undefined ? {} : { max_concurrency: options.mainConcurrency }),
      },
      backup: { type: "openai", base_url: backup.url, api_keys: ["sk-backup"] },
      // Listed, so the chat route knows `claude/claude-test` (it is neither primary nor fallback).
      claude: {
        type: "anthropic",
        base_url: peer.url,
        api_keys: ["sk-ant"],
        models: { "claude-test": { context_window: 200_000, max_output_tokens: 4096 } },
      },
    },
    fallback: [{ provider: "backup", name: "echo" }],
    retry: { max_attempts: 3 },
    gateway: { api_key: key },
    ...(options.breaker === false ? { breaker: { enabled: false } } : {}),
  });
  const deps = fakeDeps();
  const agent = await Agent.create({ paths, config, store, deps });
  cleanups.push(() => agent.close());
  let at: { host: string; port: number } | null = null;
  const gateway = new Gateway({ agent, store, config, cwd: tempDir("tenax-project-") });
  const app = buildGatewayApp({ gateway, agent, store, config, version: "test", listening: () => at });
  const port = await listen(app, "127.0.0.1", 0, { name: "gateway", hint: "" });
  at = { host: "127.0.0.1", port };
  cleanups.push(async () => {
    await gateway.interruptAll();
    await closeApp(app);
  });
  const url = `http://127.0.0.1:${port}/v1`;
  return {
    url,
    key,
    main,
    backup,
    peer,
    store,
    runtime: agent.runtime,
    deps,
    client: new OpenAI({ baseURL: url, apiKey: key, maxRetries: 0 }),
    bodies: (sim) =>
      sim
        .requests()
        .filter((r) => r.path === "/v1/chat/completions")
        .map((r) => r.body as Record<string, unknown>),
  };
}
