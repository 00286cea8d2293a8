// The model-gateway mode served for tests: the handler from createModelCallHandler behind a small
// real node:http server on 127.0.0.1 port 0 (the chat route's part, choosing the target from
// `model`, is stood in for here), a real ModelRouter built from a config, a real store in a temp
// profile, and simulators (and an Anthropic-wire peer) over real HTTP. All closed after each test.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import OpenAI from "openai";
import { afterEach } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { createModelCallHandler } from "../../src/gateway/model-call.js";
import { createModelRuntime, type ModelRuntime } from "../../src/llm/runtime.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import { type AnthropicPeer, startAnthropicPeer } from "./anthropic-peer.js";
import { type FakeDeps, fakeDeps } from "./fake-time.js";
import { tempProfile } from "./tmp.js";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export interface ModelGateway {
  url: string;
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

/** `mainConcurrency` is the primary provider's max_concurrency (config's default otherwise). */
export async function startModelGateway(options: { mainConcurrency?: number } = {}): Promise<ModelGateway> {
  const main = await startSimulator();
  cleanups.push(() => main.close());
  const backup = await startSimulator();
  cleanups.push(() => backup.close());
  const peer = await startAnthropicPeer();
  cleanups.push(() => peer.close());
  const store = await openStore(tempProfile(), { integrityCheckTimeoutMs: 0 });
  cleanups.push(async () => releaseStore(store));
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
      claude: { type: "anthropic", base_url: peer.url, api_keys: ["sk-ant"] },
    },
    fallback: [{ provider: "backup", name: "echo" }],
    retry: { max_attempts: 3 },
  });
  const deps = fakeDeps();
  const runtime = await createModelRuntime(config, { deps, ledger: store.credentials() });
  cleanups.push(() => runtime.close());
  const handler = createModelCallHandler({ router: runtime.router, store });
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on("data", (p: Buffer) => parts.push(p));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(parts).toString("utf8")) as Record<string, unknown>;
      const [provider, ...rest] = String(body.model).split("/");
      const sessionId = req.headers["x-session-id"];
      void handler({
        target: { provider: provider ?? "", model: rest.join("/") },
        body,
        ...(typeof sessionId === "string" ? { sessionId } : {}),
        req,
        res,
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    main,
    backup,
    peer,
    store,
    runtime,
    deps,
    client: new OpenAI({ baseURL: url, apiKey: "sk-gateway", maxRetries: 0 }),
    bodies: (sim) =>
      sim
        .requests()
        .filter((r) => r.path === "/v1/chat/completions")
        .map((r) => r.body as Record<string, unknown>),
  };
}
