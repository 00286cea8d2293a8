// The HTTP framework choice (issue 14): what Fastify 5 and Hono 4 add to the same route over the
// plain node:http server Tenax runs today (bench/http-framework-app.ts). Each variant runs in a
// process of its own on 127.0.0.1 port 0 and takes the gateway bench's load generator
// (gateway-load.ts, a process of its own too): the open loop at a fixed rate, the closed loop, one
// request at a time and the streamed variant, the three variants in shuffled turns within every
// round so the machine's noise falls on each alike. "Added" is the median over rounds of
// (framework - node:http) in the same round. Then, in this process, what one in-process call
// costs: fastify.inject() against Hono's app.request().
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { seededRandom } from "../src/core/deps.js";
import type { LoadPlan, LoadResult, LoadTarget } from "./gateway-load.js";
import { buildFastify, buildHono, FRAMEWORKS, type Framework, ROUTE } from "./http-framework-app.js";
import { type Child, launch, printedUrl, runLoad, stopAll } from "./load-run.js";
import { type Aim, table } from "./report.js";
import { median, shuffle } from "./stats.js";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const HEADERS = { "content-type": "application/json" };
const PROMPT = "say something short about resilient agents";
/** What a framework may add at p50 over node:http, in ms (issue 14). */
export const FRAMEWORK_BUDGET_MS = 0.1;

export interface FrameworkSettings {
  rps: number;
  /** Open-loop seconds per variant, split over `rounds`. */
  seconds: number;
  rounds: number;
  warmupSeconds: number;
  closedClients: number;
  closedSeconds: number;
  streams: number;
  inProcessRounds: number;
  inProcessBatch: number;
}

type Other = Exclude<Framework, "node">;
const OTHERS: readonly Other[] = ["fastify", "hono"];

interface Figures {
  p50_ms: number;
  p99_ms: number;
}

/** Wall and CPU µs per call (CPU: this process's user + system time, less hit by other processes). */
interface InProcessFigures {
  fastify_inject_us: number;
  hono_request_us: number;
  fastify_over_hono_us: number;
  fastify_inject_cpu_us: number;
  hono_request_cpu_us: number;
}

export interface FrameworkResult {
  settings: FrameworkSettings;
  versions: Record<Framework, string>;
  /** Median over rounds of each round's figure. */
  open: Record<Framework, Figures & { max_ms: number; errors: number; sent: number; achieved_rps: number }>;
  /** Median over rounds of (variant - node:http, same round). */
  open_added: Record<Other, Figures>;
  closed: Record<Framework, Figures & { rps: number; errors: number }>;
  /** Median over rounds of (variant rps / node:http rps, same round). */
  closed_ratio: Record<Other, number>;
  serial: Record<Framework, Figures>;
  serial_added: Record<Other, Figures>;
  stream: Record<
    Framework,
    { ttft_p50_ms: number; total_p50_ms: number; total_p99_ms: number; errors: number }
  >;
  /** µs per in-process call, median of rounds; `over_hono` the median of per-round differences. */
  in_process: {
    json: InProcessFigures;
    stream: InProcessFigures;
  };
  error_samples: Record<string, string[]>;
  raw: LoadResult;
}

/** The installed version of a package (npm runs the bench from the repository root). */
function version(name: string): string {
  try {
    const pkg = JSON.parse(readFileSync(join("node_modules", name, "package.json"), "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

export async function runFrameworkBench(
  settings: FrameworkSettings,
  log: (line: string) => void,
): Promise<FrameworkResult> {
  const children: Child[] = [];
  let raw: LoadResult;
  try {
    const targets: LoadTarget[] = [];
    for (const kind of FRAMEWORKS) {
      const child = launch([join(HERE, "http-framework-child.js"), kind]);
      children.push(child);
      const url = await printedUrl(`the ${kind} server`, child);
      const check = await fetch(`${url}${ROUTE}`, {
        method: "POST",
        headers: HEADERS,
        body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "ready?" }] }),
      });
      const text = await check.text();
      if (check.status !== 200) throw new Error(`the ${kind} server answered ${check.status}: ${text}`);
      log(`  ${kind}: ${url} (pid ${child.child.pid}), answer ${Buffer.byteLength(text)} bytes`);
      targets.push({ name: kind, origin: url, path: ROUTE, headers: HEADERS });
    }
    const plan: LoadPlan = {
      targets,
      diagnosticTargets: [],
      rps: settings.rps,
      rounds: settings.rounds,
      roundSeconds: settings.seconds / settings.rounds,
      warmupSeconds: settings.warmupSeconds,
      closedClients: settings.closedClients,
      closedSeconds: settings.closedSeconds,
      closedRounds: settings.rounds,
      streams: settings.streams,
      seed: 0x14f1,
      prompt: PROMPT,
    };
    raw = await runLoad(plan, log);
  } finally {
    await stopAll(children);
  }
  log(`  in-process calls: ${settings.inProcessRounds} rounds of ${settings.inProcessBatch} calls each`);
  const inProcess = await measureInProcess(settings.inProcessRounds, settings.inProcessBatch);
  return summarize(settings, raw, inProcess);
}

/** µs per call of fastify.inject() and Hono's app.request(), the two in alternating batches. */
async function measureInProcess(rounds: number, batch: number): Promise<FrameworkResult["in_process"]> {
  const fastify = buildFastify();
  await fastify.ready();
  const hono = buildHono();
  const body = (stream: boolean) =>
    JSON.stringify({ model: "echo", messages: [{ role: "user", content: PROMPT }], stream });
  const callers = (stream: boolean) => ({
    fastify: async () => {
      const res = await fastify.inject({
        method: "POST",
        url: ROUTE,
        headers: HEADERS,
        payload: body(stream),
      });
      if (res.statusCode !== 200 || res.body.length < 500)
        throw new Error(`inject: ${res.statusCode} ${res.body}`);
    },
    hono: async () => {
      const res = await hono.request(ROUTE, { method: "POST", headers: HEADERS, body: body(stream) });
      const text = await res.text();
      if (res.status !== 200 || text.length < 500) throw new Error(`app.request: ${res.status} ${text}`);
    },
  });
  const random = seededRandom(0x14f2);
  const measure = async (stream: boolean) => {
    const call = callers(stream);
    const us: Record<"fastify" | "hono", number[]> = { fastify: [], hono: [] };
    const cpu: Record<"fastify" | "hono", number[]> = { fastify: [], hono: [] };
    for (let round = -1; round < rounds; round++) {
      for (const kind of shuffle<"fastify" | "hono">(["fastify", "hono"], random)) {
        const started = performance.now();
        const cpuStarted = process.cpuUsage();
        for (let i = 0; i < batch; i++) await call[kind]();
        const used = process.cpuUsage(cpuStarted);
        if (round < 0) continue; // round -1 is the warm-up
        us[kind].push(((performance.now() - started) * 1000) / batch);
        cpu[kind].push((used.user + used.system) / batch);
      }
    }
    return {
      fastify_inject_us: median(us.fastify),
      hono_request_us: median(us.hono),
      fastify_over_hono_us: median(us.fastify.map((f, i) => f - (us.hono[i] ?? Number.NaN))),
      fastify_inject_cpu_us: median(cpu.fastify),
      hono_request_cpu_us: median(cpu.hono),
    };
  };
  try {
    return { json: await measure(false), stream: await measure(true) };
  } finally {
    await fastify.close();
  }
}

function summarize(
  settings: FrameworkSettings,
  raw: LoadResult,
  inProcess: FrameworkResult["in_process"],
): FrameworkResult {
  const per = <T>(f: (k: Framework) => T) =>
    Object.fromEntries(FRAMEWORKS.map((k) => [k, f(k)])) as Record<Framework, T>;
  const perOther = <T>(f: (k: Other) => T) =>
    Object.fromEntries(OTHERS.map((k) => [k, f(k)])) as Record<Other, T>;
  type Row = { target: string; round: number; latency: Figures };
  const of = <R extends Row>(rows: readonly R[], k: Framework) => rows.filter((r) => r.target === k);
  const paired = <R extends Row>(
    rows: readonly R[],
    k: Other,
    value: (r: R) => number,
    combine: (a: number, b: number) => number,
  ) =>
    median(
      of(rows, k)
        .map((r) => {
          const base = of(rows, "node").find((b) => b.round === r.round);
          return base === undefined ? Number.NaN : combine(value(r), value(base));
        })
        .filter(Number.isFinite),
    );
  const minus = (a: number, b: number) => a - b;
  const added = <R extends Row>(rows: readonly R[]) =>
    perOther((k) => ({
      p50_ms: paired(rows, k, (r) => r.latency.p50_ms, minus),
      p99_ms: paired(rows, k, (r) => r.latency.p99_ms, minus),
    }));
  const streamOf = (k: Framework) => raw.stream.find((s) => s.target === k);
  return {
    settings,
    versions: { node: process.version, fastify: version("fastify"), hono: version("hono") },
    open: per((k) => {
      const rs = of(raw.open, k);
      return {
        p50_ms: median(rs.map((r) => r.latency.p50_ms)),
        p99_ms: median(rs.map((r) => r.latency.p99_ms)),
        max_ms: Math.max(...rs.map((r) => r.latency.max_ms)),
        errors: rs.reduce((a, r) => a + r.errors, 0),
        sent: rs.reduce((a, r) => a + r.sent, 0),
        achieved_rps: median(rs.map((r) => r.achieved_rps)),
      };
    }),
    open_added: added(raw.open),
    closed: per((k) => {
      const rs = of(raw.closed, k);
      return {
        rps: median(rs.map((r) => r.rps)),
        p50_ms: median(rs.map((r) => r.latency.p50_ms)),
        p99_ms: median(rs.map((r) => r.latency.p99_ms)),
        errors: rs.reduce((a, r) => a + r.errors, 0),
      };
    }),
    closed_ratio: perOther((k) =>
      paired(
        raw.closed,
        k,
        (r) => r.rps,
        (a, b) => a / b,
      ),
    ),
    serial: per((k) => {
      const rs = of(raw.serial, k);
      return {
        p50_ms: median(rs.map((r) => r.latency.p50_ms)),
        p99_ms: median(rs.map((r) => r.latency.p99_ms)),
      };
    }),
    serial_added: added(raw.serial),
    stream: per((k) => {
      const s = streamOf(k);
      return {
        ttft_p50_ms: s?.ttft.p50_ms ?? Number.NaN,
        total_p50_ms: s?.total.p50_ms ?? Number.NaN,
        total_p99_ms: s?.total.p99_ms ?? Number.NaN,
        errors: s?.errors ?? 0,
      };
    }),
    in_process: inProcess,
    error_samples: raw.error_samples,
    raw,
  };
}

export function judgeFrameworkAims(r: FrameworkResult): Aim[] {
  return OTHERS.map((k) => {
    const a = r.open_added[k];
    return {
      aim: `${k} adds at most ${FRAMEWORK_BUDGET_MS} ms p50 over node:http at ${r.settings.rps}/s`,
      met: a.p50_ms <= FRAMEWORK_BUDGET_MS && r.open[k].errors === 0,
      detail: `added p50 ${plus(a.p50_ms, 3)} ms, p99 ${plus(a.p99_ms, 3)} ms (median of ${r.settings.rounds} paired rounds); closed loop x${r.closed_ratio[k].toFixed(2)} of node:http`,
    };
  });
}

const plus = (n: number, digits = 2) =>
  Number.isFinite(n) ? `${n >= 0 ? "+" : ""}${n.toFixed(digits)}` : "-";
const f = (n: number, digits = 3) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

export function frameworkLines(r: FrameworkResult): string[] {
  const s = r.settings;
  const label: Record<Framework, string> = {
    node: "node:http, hand-written router (today)",
    fastify: `Fastify ${r.versions.fastify}`,
    hono: `Hono ${r.versions.hono} on @hono/node-server`,
  };
  const lines = [
    `\nHTTP framework, the same route (zod-checked JSON body, ~1 KB JSON answer): open loop at ${s.rps}/s, ${s.seconds} s per variant in ${s.rounds} shuffled rounds`,
    table(
      ["variant", "p50 ms", "p99 ms", "max ms", "added p50", "added p99", "errors", "achieved /s"],
      FRAMEWORKS.map((k) => [
        label[k],
        f(r.open[k].p50_ms),
        f(r.open[k].p99_ms),
        f(r.open[k].max_ms, 2),
        k === "node" ? "" : plus(r.open_added[k].p50_ms, 3),
        k === "node" ? "" : plus(r.open_added[k].p99_ms, 3),
        `${r.open[k].errors}/${r.open[k].sent}`,
        r.open[k].achieved_rps.toFixed(0),
      ]),
    ),
    `\nclosed loop (${s.closedClients} clients, ${s.closedSeconds} s x ${s.rounds} rounds), one request at a time (1 client), and streamed (${s.streams} requests each, interleaved, 20 SSE chunks)`,
    table(
      [
        "variant",
        "closed /s",
        "x node",
        "serial p50",
        "added",
        "stream TTFT p50",
        "stream total p50",
        "total p99",
      ],
      FRAMEWORKS.map((k) => [
        label[k],
        r.closed[k].rps.toFixed(0),
        k === "node" ? "" : `x${r.closed_ratio[k].toFixed(2)}`,
        f(r.serial[k].p50_ms),
        k === "node" ? "" : plus(r.serial_added[k].p50_ms, 3),
        f(r.stream[k].ttft_p50_ms),
        f(r.stream[k].total_p50_ms),
        f(r.stream[k].total_p99_ms),
      ]),
    ),
    `\nin-process call, no socket (median of ${s.inProcessRounds} rounds of ${s.inProcessBatch} calls, alternating)`,
    table(
      [
        "route",
        "fastify.inject() µs",
        "hono app.request() µs",
        "Fastify - Hono µs",
        "CPU µs Fastify",
        "CPU µs Hono",
      ],
      (["json", "stream"] as const).map((k) => [
        k,
        r.in_process[k].fastify_inject_us.toFixed(1),
        r.in_process[k].hono_request_us.toFixed(1),
        plus(r.in_process[k].fastify_over_hono_us, 1),
        r.in_process[k].fastify_inject_cpu_us.toFixed(1),
        r.in_process[k].hono_request_cpu_us.toFixed(1),
      ]),
    ),
  ];
  for (const [target, samples] of Object.entries(r.error_samples)) {
    lines.push(`  ${target} errors, first ones: ${samples.join(" | ")}`);
  }
  return lines;
}
