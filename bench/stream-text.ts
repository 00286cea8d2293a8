// Streamed text against its length: a reply of 25 to 400 KB in 4-character deltas, the whole way a
// reply travels (the simulator over HTTP, the OpenAI provider client and its assembly, the router,
// the agent's turn with a listener collecting the text as the chat CLI prints it), and the same
// without the socket. Time must grow linearly with the reply: twice the text, twice the time.
import { mkdtempSync } from "node:fs";
import { join } from "node:path";
import { Agent } from "../src/agent/agent.js";
import { configSchema } from "../src/config/schema.js";
import { defaultDeps, seededRandom } from "../src/core/deps.js";
import { ConcurrencyLimiter } from "../src/llm/concurrency.js";
import { CredentialPool } from "../src/llm/credential-pool.js";
import { createOpenAIProvider } from "../src/llm/providers/openai.js";
import { wireFromFetch } from "../src/llm/providers/openai-wire.js";
import { ModelRouter } from "../src/llm/router.js";
import type { ModelRuntime } from "../src/llm/runtime.js";
import { startSimulator } from "../src/llm/simulator/server.js";
import { profilePaths } from "../src/profile/paths.js";
import { MemoryCredentialLedger } from "../src/store/credential-ledger.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import type { Store } from "../src/store/store.js";
import { type Aim, ms, table } from "./report.js";
import { median, shuffle } from "./stats.js";

export const STREAM_VARIANTS = ["turn_http", "turn_canned", "provider_canned"] as const;
export type StreamVariant = (typeof STREAM_VARIANTS)[number];

export interface StreamSizeFigures {
  kb: number;
  deltas: number;
  /** The body the simulator sends for it, in bytes. */
  sse_bytes: number;
  ms: number[];
  median_ms: number;
  min_ms: number;
  median_us_per_kb: number;
}

export interface StreamVariantResult {
  by_size: StreamSizeFigures[];
  /** time(2n) / time(n) on the medians, for each doubling measured: "200/100" and so on. About 2 is linear. */
  doubling: Record<string, number>;
  /** k in time = c·size^k, fitted by least squares on the logs of every size's median: 1 is linear, 2 quadratic. */
  exponent: number;
}

export interface StreamResult {
  chunk_chars: number;
  sizes_kb: number[];
  repeats: number;
  /** Bytes per piece the canned body is handed to the SDK in, as a socket read would. */
  canned_piece_bytes: number;
  /** Samples taken again because the model call was retried (a reused socket the server had closed). */
  retaken: number;
  by_variant: Record<StreamVariant, StreamVariantResult>;
}

const KEY = "sk-bench";
const MODEL = "echo";
const CHUNK_CHARS = 4;
const KB = 1024;
/** Reads of the simulator's body over loopback arrive in pieces of about 16 KiB; the canned body does too. */
const PIECE_BYTES = 16 * KB;

/** ASCII prose of exactly `chars` characters, the same every run, so a character is a byte. */
export function replyText(chars: number): string {
  const words = ["stream", "the", "reply", "of", "a", "model", "arrives", "in", "small", "deltas", "and"];
  const random = seededRandom(chars);
  const parts: string[] = [];
  let length = 0;
  while (length < chars) {
    const word = words[Math.floor(random() * words.length)] ?? "and";
    parts.push(word);
    length += word.length + 1;
  }
  return parts.join(" ").slice(0, chars);
}

export async function runStreamBench(
  workDir: string,
  options: { sizesKb: number[]; repeats: number; log: (line: string) => void },
): Promise<StreamResult> {
  const sim = await startSimulator({ models: { [MODEL]: { context_window: 10_000_000 } } });
  const home = mkdtempSync(join(workDir, "stream-"));
  const store = await openStore(profilePaths(home, "default"), { integrityCheckTimeoutMs: 0 });
  const agents: Agent[] = [];
  try {
    const texts = new Map(options.sizesKb.map((kb) => [kb, replyText(kb * KB)]));
    // The simulator's own SSE body for each size, captured once, for the variants without a socket.
    const bodies = new Map<number, string>();
    for (const [kb, text] of texts) bodies.set(kb, await sseBody(sim.url, text));
    let served = "";
    const canned = cannedFetch(() => served);

    const config = configSchema.parse({
      model: { provider: "main", name: MODEL },
      providers: {
        main: {
          type: "simulator",
          base_url: sim.url,
          api_keys: [KEY],
          models: { [MODEL]: { context_window: 10_000_000, max_output_tokens: 4096 } },
        },
      },
      // A keep-alive socket the simulator closes just as it is reused fails the first attempt with
      // ECONNRESET: the retry layer takes it again, and the bench takes that sample again.
      retry: { max_attempts: 2 },
    });
    const paths = profilePaths(home, "default");
    const overHttp = await Agent.create({ paths, config, store });
    const overCanned = await Agent.create({ paths, config, store, runtime: cannedRuntime(canned) });
    agents.push(overHttp, overCanned);
    const provider = createOpenAIProvider({
      name: "main",
      baseURL: "http://canned.invalid/v1",
      request: wireFromFetch(canned),
    });

    const runs: Record<StreamVariant, (kb: number) => Promise<{ text: string; retried: boolean }>> = {
      turn_http: async (kb) => {
        sim.reset();
        sim.script([{ type: "reply", text: texts.get(kb) ?? "", chunk_size: CHUNK_CHARS }]);
        return turn(overHttp, store);
      },
      turn_canned: (kb) => {
        served = bodies.get(kb) ?? "";
        return turn(overCanned, store);
      },
      provider_canned: async (kb) => {
        served = bodies.get(kb) ?? "";
        const parts: string[] = [];
        for await (const event of provider.stream(
          { model: MODEL, messages: [{ role: "user", content: "go" }] },
          { apiKey: KEY },
        )) {
          if (event.type === "text") parts.push(event.delta);
          else if (event.type === "done") return { text: parts.join(""), retried: false };
          else if (event.type === "error") throw new Error(`the provider failed: ${event.error.message}`);
        }
        throw new Error("the provider's stream ended without done or error");
      },
    };

    const samples = Object.fromEntries(
      STREAM_VARIANTS.map((v) => [v, new Map(options.sizesKb.map((kb) => [kb, [] as number[]]))]),
    ) as Record<StreamVariant, Map<number, number[]>>;
    const random = seededRandom(0x57ea);
    let retaken = 0;
    const jobs = STREAM_VARIANTS.flatMap((variant) => options.sizesKb.map((kb) => ({ variant, kb })));
    // Round -1 warms every path up (the JIT, the SQLite statements) and is not kept.
    for (let round = -1; round < options.repeats; round++) {
      for (const { variant, kb } of shuffle([...jobs], random)) {
        for (;;) {
          const started = performance.now();
          const { text, retried } = await runs[variant](kb);
          const took = performance.now() - started;
          if (text !== texts.get(kb)) throw new Error(`${variant} at ${kb} KB read a different text`);
          // The search index takes the new reply after the turn, outside the timed part.
          store.index.flush();
          if (retried) {
            retaken++;
            continue;
          }
          if (round >= 0) samples[variant].get(kb)?.push(took);
          break;
        }
      }
      options.log(`  round ${round + 1} of ${options.repeats} done`);
    }

    const byVariant = Object.fromEntries(
      STREAM_VARIANTS.map((variant) => {
        const bySize = options.sizesKb.map((kb): StreamSizeFigures => {
          const ms = samples[variant].get(kb) ?? [];
          return {
            kb,
            deltas: Math.ceil((kb * KB) / CHUNK_CHARS),
            sse_bytes: Buffer.byteLength(bodies.get(kb) ?? ""),
            ms,
            median_ms: median(ms),
            min_ms: Math.min(...ms),
            median_us_per_kb: (median(ms) * 1000) / kb,
          };
        });
        return [variant, { by_size: bySize, doubling: doublings(bySize), exponent: exponent(bySize) }];
      }),
    ) as Record<StreamVariant, StreamVariantResult>;
    return {
      chunk_chars: CHUNK_CHARS,
      sizes_kb: options.sizesKb,
      repeats: options.repeats,
      canned_piece_bytes: PIECE_BYTES,
      retaken,
      by_variant: byVariant,
    };
  } finally {
    for (const agent of agents) await agent.close();
    await sim.close();
    await releaseStore(store);
  }
}

/** One turn in a new session (a reply of its own, no history), the text collected from its events. */
async function turn(agent: Agent, store: Store): Promise<{ text: string; retried: boolean }> {
  const sessionId = await store.createSession({ title: null, source: "bench", model: MODEL });
  let parts: string[] = [];
  let retried = false;
  const result = await agent.turn({
    sessionId,
    text: "go",
    cwd: process.cwd(),
    onEvent: (event) => {
      if (event.type === "text") parts.push(event.delta);
      else if (event.type === "retry" || event.type === "stream_restart") {
        retried = true;
        parts = [];
      }
    },
  });
  if (result.status !== "completed") throw new Error(`the turn ended ${result.status}: ${result.error}`);
  const text = parts.join("");
  if (text !== result.reply) throw new Error("the events and the turn's reply differ");
  return { text, retried };
}

/** The slope of log(time) against log(size): one noisy size moves it far less than it moves a ratio. */
function exponent(bySize: StreamSizeFigures[]): number {
  const points = bySize.map((s) => [Math.log(s.kb), Math.log(s.median_ms)] as const);
  const mx = points.reduce((a, [x]) => a + x, 0) / points.length;
  const my = points.reduce((a, [, y]) => a + y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? Number.NaN : num / den;
}

/** time(2n) / time(n) for every pair of measured sizes one doubling apart. */
function doublings(bySize: StreamSizeFigures[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const big of bySize) {
    const half = bySize.find((s) => s.kb * 2 === big.kb);
    if (half) out[`${big.kb}/${half.kb}`] = big.median_ms / half.median_ms;
  }
  return out;
}

/** What the simulator sends for a reply step of this text in 4-character chunks, read once over HTTP. */
async function sseBody(url: string, text: string): Promise<string> {
  const control = `${url.replace(/\/v1$/, "")}/__sim`;
  await fetch(`${control}/reset`, { method: "POST" });
  await fetch(`${control}/script`, {
    method: "POST",
    body: JSON.stringify([{ type: "reply", text, chunk_size: CHUNK_CHARS }]),
  });
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: "go" }],
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!response.ok) throw new Error(`the simulator answered ${response.status}`);
  return response.text();
}

/** A fetch that answers every call with the current body, handed over in socket-sized pieces. */
function cannedFetch(body: () => string) {
  return async () => {
    const bytes = new TextEncoder().encode(body());
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (offset >= bytes.length) {
          controller.close();
          return;
        }
        controller.enqueue(bytes.subarray(offset, offset + PIECE_BYTES));
        offset += PIECE_BYTES;
      },
    });
    return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
}

/** The runtime an agent gets from config, with the OpenAI provider reading canned bodies instead of a socket. */
function cannedRuntime(fetch: ReturnType<typeof cannedFetch>): ModelRuntime {
  const router = new ModelRouter({
    providers: new Map([
      [
        "main",
        {
          name: "main",
          provider: createOpenAIProvider({
            name: "main",
            baseURL: "http://canned.invalid/v1",
            request: wireFromFetch(fetch),
          }),
          pool: new CredentialPool("main", [KEY], { ledger: new MemoryCredentialLedger() }),
          base_url: "http://canned.invalid/v1",
          limiter: new ConcurrencyLimiter(8),
          models: { [MODEL]: { context_window: 10_000_000, max_output_tokens: 4096 } },
        },
      ],
    ]),
    primary: { provider: "main", model: MODEL },
    fallback: [],
    auxiliary: {},
    deps: defaultDeps,
    maxAttempts: 1,
  });
  return { router, simulators: new Map(), builtIn: false, close: async () => {} };
}

/**
 * Linear: time grows as size^k with k at most 1.2 on every path, fitted over every size (a
 * quadratic path has k = 2). Judged on the fit, not on one doubling, which one noisy median moves.
 */
export const LINEAR_EXPONENT_MAX = 1.2;

export function judgeStreamAim(r: StreamResult): Aim {
  const worst = Math.max(...STREAM_VARIANTS.map((v) => r.by_variant[v].exponent));
  const http = r.by_variant.turn_http;
  const ratio = (key: string) => http.doubling[key]?.toFixed(2) ?? "-";
  return {
    aim: "streamed text: time linear in the reply",
    met: worst <= LINEAR_EXPONENT_MAX,
    detail:
      `full path time(200)/time(100) x${ratio("200/100")}, time(100)/time(50) x${ratio("100/50")} ` +
      `(linear 2, quadratic 4); time ~ size^k with k ${http.exponent.toFixed(2)}, at most ${worst.toFixed(2)} on any path`,
  };
}

const STREAM_LABELS: Record<StreamVariant, string> = {
  turn_http: "agent turn, simulator over HTTP",
  turn_canned: "agent turn, canned body, no socket",
  provider_canned: "OpenAI provider alone, canned body",
};

export function streamLines(r: StreamResult): string[] {
  const doublings = Object.keys(r.by_variant.turn_http.doubling);
  return [
    `\nstreamed text in ${r.chunk_chars}-character deltas (median of ${r.repeats} runs per size, interleaved; ${r.retaken} retaken after a retry)`,
    table(
      ["path", ...r.sizes_kb.map((kb) => `${kb} KB ms`), ...r.sizes_kb.map((kb) => `${kb} µs/KB`)],
      STREAM_VARIANTS.map((v) => [
        STREAM_LABELS[v],
        ...r.by_variant[v].by_size.map((s) => ms(s.median_ms)),
        ...r.by_variant[v].by_size.map((s) => s.median_us_per_kb.toFixed(0)),
      ]),
    ),
    table(
      ["path", ...doublings.map((d) => `time ${d}`), "k in time ~ size^k"],
      STREAM_VARIANTS.map((v) => [
        STREAM_LABELS[v],
        ...doublings.map((d) => `x${r.by_variant[v].doubling[d]?.toFixed(2) ?? "-"}`),
        r.by_variant[v].exponent.toFixed(2),
      ]),
    ),
  ];
}
