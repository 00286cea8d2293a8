// The resilience layer's own CPU cost, without a socket: the router, limiter, key pool, ledger and
// retry around a provider that answers at once, and the OpenAI provider client around a canned SSE
// response against the bare SDK on the same response. Variants are timed in batches, interleaved.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { defaultDeps, seededRandom } from "../src/core/deps.js";
import { ConcurrencyLimiter } from "../src/llm/concurrency.js";
import { CredentialPool } from "../src/llm/credential-pool.js";
import { keyFingerprint } from "../src/llm/key-fingerprint.js";
import type { Provider, ProviderEvent, ToolSpec } from "../src/llm/provider.js";
import { createOpenAIProvider } from "../src/llm/providers/openai.js";
import { wireFromFetch } from "../src/llm/providers/openai-wire.js";
import { ModelRouter } from "../src/llm/router.js";
import { profilePaths } from "../src/profile/paths.js";
import { type CredentialStateStore, MemoryCredentialLedger } from "../src/store/credential-ledger.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { KEY, MODEL, REQUEST, WIRE_BODY } from "./router-overhead.js";
import { median, shuffle } from "./stats.js";

export const MICRO_VARIANTS = [
  "provider_direct",
  "layer_memory",
  "layer_sqlite",
  "layer_memory_tools",
  "sdk_canned",
  "openai_provider_canned",
] as const;
export type MicroVariant = (typeof MICRO_VARIANTS)[number];

export interface RouterMicroResult {
  rounds: number;
  batch: number;
  /** Median over rounds of each round's mean time per call, in microseconds. */
  us_per_call: Record<MicroVariant, number>;
}

/** Twenty tools of about 540 characters each, the size of an agent's usual tool list. */
const TOOLS: ToolSpec[] = Array.from({ length: 20 }, (_, i) => ({
  name: `tool_${i}`,
  description: "Read a file of the workspace and return its lines, numbered, from an offset. ".repeat(3),
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "the path, relative to the workspace root" },
      offset: { type: "integer", description: "the first line to read, 1-based" },
      limit: { type: "integer", description: "how many lines to read at most" },
    },
    required: ["path"],
    additionalProperties: false,
  },
}));

const DONE: ProviderEvent = { type: "done", finish_reason: "stop", text: "ok", tool_calls: [], usage: null };

/** A provider with no I/O: one `done` at once, so what is timed around it is bookkeeping. */
const instant: Provider = {
  name: "instant",
  stream: async function* () {
    yield DONE;
  },
};

export async function runRouterMicroBench(
  workDir: string,
  sseBody: string,
  options: { rounds: number; batch: number },
): Promise<RouterMicroResult> {
  const home = mkdtempSync(join(workDir, "router-micro-"));
  const store = await openStore(profilePaths(home, "default"), { integrityCheckTimeoutMs: 0 });
  try {
    const memory = routerOver(instant, new MemoryCredentialLedger());
    const sqlite = routerOver(instant, store.credentials());
    for (const ledger of [memory.ledger, sqlite.ledger]) {
      await ledger.record("main", keyFingerprint(KEY), { status: "ok", now: Date.now() });
    }
    // A fresh Response each call: a body can be read once.
    const canned = async () =>
      new Response(sseBody, { status: 200, headers: { "content-type": "text/event-stream" } });
    const sdk = new OpenAI({
      baseURL: "http://canned.invalid/v1",
      apiKey: KEY,
      maxRetries: 0,
      fetch: canned,
    });
    const provider = createOpenAIProvider({
      name: "main",
      baseURL: "http://canned.invalid/v1",
      request: wireFromFetch(canned),
    });
    const calls: Record<MicroVariant, () => Promise<unknown>> = {
      provider_direct: () => drain(instant.stream({ ...REQUEST, model: MODEL }, { apiKey: KEY })),
      layer_memory: () => memory.router.turn().complete(REQUEST),
      layer_sqlite: () => sqlite.router.turn().complete(REQUEST),
      layer_memory_tools: () => memory.router.turn().complete({ ...REQUEST, tools: TOOLS }),
      sdk_canned: async () => {
        for await (const _ of await sdk.chat.completions.create(WIRE_BODY)) {
          // Read every chunk, as the provider does.
        }
      },
      openai_provider_canned: () => drain(provider.stream({ ...REQUEST, model: MODEL }, { apiKey: KEY })),
    };
    const perRound = Object.fromEntries(MICRO_VARIANTS.map((v) => [v, [] as number[]])) as Record<
      MicroVariant,
      number[]
    >;
    const random = seededRandom(0x3c1e);
    const order = [...MICRO_VARIANTS];
    // Round -1 warms every path up and is not kept.
    for (let round = -1; round < options.rounds; round++) {
      for (const variant of shuffle(order, random)) {
        const call = calls[variant];
        const started = performance.now();
        for (let i = 0; i < options.batch; i++) await call();
        const usPerCall = ((performance.now() - started) * 1000) / options.batch;
        if (round >= 0) perRound[variant].push(usPerCall);
      }
    }
    return {
      rounds: options.rounds,
      batch: options.batch,
      us_per_call: Object.fromEntries(MICRO_VARIANTS.map((v) => [v, median(perRound[v])])) as Record<
        MicroVariant,
        number
      >,
    };
  } finally {
    await releaseStore(store);
  }
}

function routerOver(
  provider: Provider,
  ledger: CredentialStateStore,
): { router: ModelRouter; ledger: CredentialStateStore } {
  const router = new ModelRouter({
    providers: new Map([
      [
        "main",
        {
          name: "main",
          provider,
          pool: new CredentialPool("main", [KEY], { ledger }),
          base_url: "http://canned.invalid/v1",
          limiter: new ConcurrencyLimiter(8),
          models: {},
        },
      ],
    ]),
    primary: { provider: "main", model: MODEL },
    fallback: [],
    auxiliary: {},
    deps: defaultDeps,
    maxAttempts: 3,
  });
  return { router, ledger };
}

async function drain(events: AsyncIterable<ProviderEvent>): Promise<void> {
  for await (const event of events) {
    if (event.type === "error") throw new Error(`the provider failed: ${event.error.message}`);
  }
}
