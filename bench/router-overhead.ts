// What the resilience layer (router, concurrency limit, key pool and its ledger, retry, the OpenAI
// provider client) adds to one model call, against a bare HTTP call and a bare SDK call to the same
// simulator. Every variant runs in the same loop, one call each per round in a shuffled order, so a
// noisy neighbour slows them all alike and the ratios hold within one run.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import OpenAI from "openai";
import { configSchema } from "../src/config/schema.js";
import { seededRandom } from "../src/core/deps.js";
import { keyFingerprint } from "../src/llm/key-fingerprint.js";
import type { RouteOptions, RouteRequest } from "../src/llm/router.js";
import { createModelRuntime, type ModelRuntime } from "../src/llm/runtime.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { profilePaths } from "../src/profile/paths.js";
import type { CredentialStateStore } from "../src/store/credential-ledger.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { type CallFigures, callFigures, pairedDiff, shuffle } from "./stats.js";

export const ROUTER_VARIANTS = [
  "fetch",
  "sdk",
  "provider",
  "router_memory",
  "router_sqlite",
  "router_signal",
] as const;
export type RouterVariant = (typeof ROUTER_VARIANTS)[number];

export interface RouterHttpResult {
  calls: number;
  warmup: number;
  reply_chars: number;
  by_variant: Record<RouterVariant, CallFigures>;
  /** Each layer variant minus a baseline, per round (the same round's calls), then its median. */
  paired_added_p50_ms: Record<
    | "memory_over_sdk"
    | "sqlite_over_sdk"
    | "signal_over_sdk"
    | "provider_over_sdk"
    | "memory_over_provider"
    | "sdk_over_fetch",
    number
  >;
}

export const KEY = "sk-bench";
export const MODEL = "echo";
const PROMPT = "say something short about resilient agents";
export const REQUEST: RouteRequest = { messages: [{ role: "user", content: PROMPT }] };
/** What the Tenax OpenAI provider sends for REQUEST, so the baselines send the same bytes. */
export const WIRE_BODY = {
  model: MODEL,
  messages: [{ role: "user" as const, content: PROMPT }],
  stream: true as const,
  stream_options: { include_usage: true },
};
/** Forget the simulator's request records now and then, so its memory stays flat over a long run. */
const RESET_EVERY = 500;

/** One call; resolves with what it read (the reply text, or for bare fetch the raw SSE body). */
type Call = () => Promise<string>;

export async function runRouterHttpBench(
  workDir: string,
  options: { calls: number; warmup: number; log: (line: string) => void },
): Promise<RouterHttpResult> {
  const sim = await startSimulator();
  const runtimes: ModelRuntime[] = [];
  const home = mkdtempSync(join(workDir, "router-"));
  const store = await openStore(profilePaths(home, "default"), { integrityCheckTimeoutMs: 0 });
  try {
    const memory = await runtimeFor(sim, undefined);
    const sqlite = await runtimeFor(sim, store.credentials());
    runtimes.push(memory, sqlite);
    const sdkClient = new OpenAI({ baseURL: sim.url, apiKey: KEY, maxRetries: 0, logLevel: "off" });
    const calls: Record<RouterVariant, Call> = {
      fetch: () => bareFetch(sim.url),
      sdk: () => bareSdk(sdkClient),
      provider: () => providerAlone(memory),
      router_memory: () => routed(memory),
      router_sqlite: () => routed(sqlite),
      // As the agent's turn calls it: the turn's abort signal and an event listener.
      router_signal: () => routed(memory, { signal: new AbortController().signal, onEvent: () => {} }),
    };
    // Every variant must read the same reply, or the comparison is of different work.
    const replies = [replyOf(await calls.fetch())];
    for (const v of ROUTER_VARIANTS.slice(1)) replies.push(await calls[v]());
    if (new Set(replies).size !== 1) throw new Error(`the variants read different replies: ${replies}`);

    const samples = Object.fromEntries(ROUTER_VARIANTS.map((v) => [v, [] as number[]])) as Record<
      RouterVariant,
      number[]
    >;
    const random = seededRandom(0x7e4a);
    const order = [...ROUTER_VARIANTS];
    options.log(
      `  ${options.warmup} warm-up rounds, then ${options.calls} timed rounds of ${ROUTER_VARIANTS.length} calls`,
    );
    for (let round = -options.warmup; round < options.calls; round++) {
      if (round % RESET_EVERY === 0) sim.reset();
      for (const variant of shuffle(order, random)) {
        const started = performance.now();
        await calls[variant]();
        const took = performance.now() - started;
        if (round >= 0) samples[variant].push(took);
      }
    }
    return {
      calls: options.calls,
      warmup: options.warmup,
      reply_chars: replies[0]?.length ?? 0,
      by_variant: Object.fromEntries(ROUTER_VARIANTS.map((v) => [v, callFigures(samples[v])])) as Record<
        RouterVariant,
        CallFigures
      >,
      paired_added_p50_ms: {
        memory_over_sdk: pairedDiff(samples.router_memory, samples.sdk),
        sqlite_over_sdk: pairedDiff(samples.router_sqlite, samples.sdk),
        signal_over_sdk: pairedDiff(samples.router_signal, samples.sdk),
        provider_over_sdk: pairedDiff(samples.provider, samples.sdk),
        memory_over_provider: pairedDiff(samples.router_memory, samples.provider),
        sdk_over_fetch: pairedDiff(samples.sdk, samples.fetch),
      },
    };
  } finally {
    await Promise.all(runtimes.map((r) => r.close()));
    await sim.close();
    await releaseStore(store);
  }
}

async function runtimeFor(sim: Simulator, ledger: CredentialStateStore | undefined): Promise<ModelRuntime> {
  const config = configSchema.parse({
    model: { provider: "main", name: MODEL },
    providers: { main: { type: "simulator", base_url: sim.url, api_keys: [KEY] } },
  });
  // A key that failed once and then worked has a row; reading it back is the production case.
  await ledger?.record("main", keyFingerprint(KEY), { status: "ok", now: Date.now() });
  return createModelRuntime(config, ledger ? { ledger } : {});
}

/** The raw SSE body the simulator sends for the bench's request, for the CPU-only bench to replay. */
export async function sampleSseBody(): Promise<string> {
  const sim = await startSimulator();
  try {
    return await bareFetch(sim.url);
  } finally {
    await sim.close();
  }
}

/** One POST with stream:true, its SSE body read to the end and nothing more. */
async function bareFetch(baseUrl: string): Promise<string> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify(WIRE_BODY),
  });
  if (!response.ok) throw new Error(`the simulator answered ${response.status}`);
  return response.text();
}

/** The reply text in a raw SSE body, for the check that every variant read the same. */
function replyOf(sse: string): string {
  let text = "";
  for (const line of sse.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const chunk = JSON.parse(line.slice(6)) as { choices: Array<{ delta?: { content?: string } }> };
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  return text;
}

async function bareSdk(client: OpenAI): Promise<string> {
  const stream = await client.chat.completions.create(WIRE_BODY);
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}

/** The Tenax OpenAI provider client on its own: its timers and watched fetch, no pool, retry or router. */
async function providerAlone(runtime: ModelRuntime): Promise<string> {
  for await (const event of runtime.router
    .runtime("main")
    .provider.stream({ ...REQUEST, model: MODEL }, { apiKey: KEY })) {
    if (event.type === "done") return event.text;
    if (event.type === "error") throw new Error(`the provider failed: ${event.error.message}`);
  }
  throw new Error("the provider's stream ended without done or error");
}

async function routed(runtime: ModelRuntime, options: RouteOptions = {}): Promise<string> {
  return (await runtime.router.turn().complete(REQUEST, options)).text;
}
