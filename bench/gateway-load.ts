// The gateway bench's load generator, run as a process of its own (its event loop shares nothing
// with the simulator or the gateways). It takes a plan as JSON in argv[2], prints the result as one
// JSON document on stdout, and sends the same chat request to every target over undici pools with
// keep-alive: an open-loop schedule in alternating rounds, a closed-loop maximum, and streamed
// requests timed to their first content token. A plan may name only some of those phases, and a
// target may be several gateways of one profile, the requests spread over them round-robin.
import { Pool } from "undici";
import { seededRandom } from "../src/core/deps.js";
import { quantile, shuffle } from "./stats.js";

export interface LoadTarget {
  name: string;
  /** Origin, e.g. http://127.0.0.1:8642. */
  origin: string;
  /** Path of the chat completions route on it. */
  path: string;
  headers: Record<string, string>;
  /** The `model` sent: the agent (`tenax`) to the Tenax gateway, the simulator's model elsewhere. */
  model?: string;
  /**
   * More gateways of the same profile, with the same path and headers: the requests are spread
   * round-robin over `origin` and these (in the closed loop, client i always sends to the i-th).
   */
  peers?: string[];
}

/** The phases of a plan; a plan that names none runs them all, in this order, after the warm-up. */
export const LOAD_PHASES = ["open", "closed", "serial", "stream"] as const;
export type LoadPhase = (typeof LOAD_PHASES)[number];

export interface LoadPlan {
  targets: LoadTarget[];
  /** Measured only one request at a time (the serial phase), to explain the others' figures. */
  diagnosticTargets: LoadTarget[];
  rps: number;
  rounds: number;
  roundSeconds: number;
  warmupSeconds: number;
  closedClients: number;
  closedSeconds: number;
  closedRounds: number;
  streams: number;
  seed: number;
  prompt: string;
  phases?: LoadPhase[];
}

export interface LatencySummary {
  n: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface OpenRound {
  target: string;
  round: number;
  sent: number;
  ok: number;
  errors: number;
  achieved_rps: number;
  /** From each request's scheduled send time to the end of its response body. */
  latency: LatencySummary;
  /** How late the generator itself sent, past the schedule (its own lag, charged to every target alike). */
  send_lag_p99_ms: number;
}

export interface ClosedRound {
  target: string;
  round: number;
  ok: number;
  errors: number;
  rps: number;
  latency: LatencySummary;
}

export interface StreamFigures {
  target: string;
  ok: number;
  errors: number;
  /** From the send to the first non-empty content delta. */
  ttft: LatencySummary;
  total: LatencySummary;
}

export interface LoadResult {
  open: OpenRound[];
  closed: ClosedRound[];
  /** One client, one request at a time: each target's cost per request without queueing. */
  serial: ClosedRound[];
  stream: StreamFigures[];
  /** Up to 5 error messages per target, to say what failed. */
  error_samples: Record<string, string[]>;
  /** Every error per target, counted by kind: `HTTP 409`, `HTTP 503`, or `network` (no answer). */
  error_kinds: Record<string, Record<string, number>>;
}

const summary = (ms: readonly number[]): LatencySummary => ({
  n: ms.length,
  p50_ms: quantile(ms, 0.5),
  p99_ms: quantile(ms, 0.99),
  max_ms: quantile(ms, 1),
});

interface Sender {
  target: LoadTarget;
  /** One per gateway of the target: its origin, then its peers. */
  pools: Pool[];
  body: string;
  streamBody: string;
}

const errorSamples: Record<string, string[]> = {};
const errorKinds: Record<string, Record<string, number>> = {};

function noteError(target: string, kind: string, message: string): void {
  const list = errorSamples[target] ?? [];
  if (list.length < 5) list.push(message);
  errorSamples[target] = list;
  const kinds = errorKinds[target] ?? {};
  kinds[kind] = (kinds[kind] ?? 0) + 1;
  errorKinds[target] = kinds;
}

/** The pool of the target's `i`-th gateway, round-robin. */
const poolOf = (s: Sender, i: number): Pool => s.pools[i % s.pools.length] as Pool;

/**
 * One non-streamed request to the target's `i`-th gateway (round-robin); resolves true when it got
 * a 200 with a body read to the end.
 */
async function once(s: Sender, i = 0): Promise<boolean> {
  try {
    const res = await poolOf(s, i).request({
      path: s.target.path,
      method: "POST",
      headers: s.target.headers,
      body: s.body,
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) {
      noteError(s.target.name, `HTTP ${res.statusCode}`, `HTTP ${res.statusCode}: ${text.slice(0, 200)}`);
      return false;
    }
    return true;
  } catch (error) {
    noteError(s.target.name, "network", error instanceof Error ? error.message : String(error));
    return false;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Sends at a fixed rate whatever the answers do (open loop). Latency runs from the scheduled time,
 * not the actual send, so a stall anywhere counts against every request it delayed.
 */
async function openLoop(s: Sender, rps: number, seconds: number, round: number): Promise<OpenRound> {
  const total = Math.max(1, Math.round(rps * seconds));
  const interval = 1000 / rps;
  const start = performance.now() + 2;
  const latencies: number[] = [];
  const lags: number[] = [];
  const inflight: Promise<void>[] = [];
  let ok = 0;
  let errors = 0;
  let lastEnd = start;
  for (let i = 0; i < total; ) {
    const now = performance.now();
    while (i < total && start + i * interval <= now) {
      const scheduled = start + i * interval;
      lags.push(now - scheduled);
      inflight.push(
        once(s, i++).then((good) => {
          const end = performance.now();
          lastEnd = Math.max(lastEnd, end);
          if (good) {
            ok++;
            latencies.push(end - scheduled);
          } else {
            errors++;
          }
        }),
      );
    }
    if (i < total) await sleep(Math.max(0, start + i * interval - performance.now()));
  }
  await Promise.all(inflight);
  return {
    target: s.target.name,
    round,
    sent: total,
    ok,
    errors,
    achieved_rps: ok / ((lastEnd - start) / 1000),
    latency: summary(latencies),
    send_lag_p99_ms: quantile(lags, 0.99),
  };
}

/** `clients` loops, each sending its next request as soon as the last one answered. */
async function closedLoop(s: Sender, clients: number, seconds: number, round: number): Promise<ClosedRound> {
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const latencies: number[] = [];
  let errors = 0;
  const client = async (_: unknown, i: number) => {
    while (performance.now() < deadline) {
      const t = performance.now();
      if (await once(s, i)) latencies.push(performance.now() - t);
      else errors++;
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  const elapsed = (performance.now() - started) / 1000;
  return {
    target: s.target.name,
    round,
    ok: latencies.length,
    errors,
    rps: latencies.length / elapsed,
    latency: summary(latencies),
  };
}

/** One streamed request: ms to the first non-empty content delta and to the end, or null on failure. */
async function streamOnce(s: Sender, i: number): Promise<{ ttft: number; total: number } | null> {
  const started = performance.now();
  try {
    const res = await poolOf(s, i).request({
      path: s.target.path,
      method: "POST",
      headers: s.target.headers,
      body: s.streamBody,
    });
    if (res.statusCode !== 200) {
      const text = (await res.body.text()).slice(0, 200);
      noteError(s.target.name, `HTTP ${res.statusCode}`, `stream HTTP ${res.statusCode}: ${text}`);
      return null;
    }
    let ttft = Number.NaN;
    let pending = "";
    for await (const chunk of res.body) {
      if (!Number.isNaN(ttft)) continue;
      pending += (chunk as Buffer).toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.startsWith("data: {")) continue;
        const event = JSON.parse(line.slice(6)) as { choices?: { delta?: { content?: string } }[] };
        if ((event.choices?.[0]?.delta?.content ?? "") !== "") {
          ttft = performance.now() - started;
          break;
        }
      }
    }
    if (Number.isNaN(ttft)) {
      noteError(s.target.name, "no content", "stream ended without a content delta");
      return null;
    }
    return { ttft, total: performance.now() - started };
  } catch (error) {
    noteError(s.target.name, "network", `stream: ${error instanceof Error ? error.message : String(error)}`);
    return null;
  }
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** What each phase measures runs over: the plan, its senders, and the one seeded shuffle. */
interface Run {
  plan: LoadPlan;
  senders: Sender[];
  /** The senders and the diagnostic ones (measured only in the serial phase). */
  everyone: Sender[];
  random: () => number;
}

async function openPhase({ plan, senders, random }: Run): Promise<OpenRound[]> {
  const open: OpenRound[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    for (const s of shuffle([...senders], random)) {
      const r = await openLoop(s, plan.rps, plan.roundSeconds, round);
      log(
        `  open loop round ${round + 1}/${plan.rounds} ${s.target.name}: p50 ${r.latency.p50_ms.toFixed(2)} ms, ` +
          `p99 ${r.latency.p99_ms.toFixed(2)} ms, ${r.errors} errors, ${r.achieved_rps.toFixed(0)}/s`,
      );
      open.push(r);
      await sleep(200);
    }
  }
  return open;
}

async function closedPhase({ plan, senders, random }: Run): Promise<ClosedRound[]> {
  const closed: ClosedRound[] = [];
  for (let round = 0; round < plan.closedRounds; round++) {
    for (const s of shuffle([...senders], random)) {
      const r = await closedLoop(s, plan.closedClients, plan.closedSeconds, round);
      log(
        `  closed loop round ${round + 1}/${plan.closedRounds} ${s.target.name}: ${r.rps.toFixed(0)}/s, ` +
          `p50 ${r.latency.p50_ms.toFixed(2)} ms, ${r.errors} errors`,
      );
      closed.push(r);
      await sleep(200);
    }
  }
  return closed;
}

async function serialPhase({ plan, senders, everyone, random }: Run): Promise<ClosedRound[]> {
  const serial: ClosedRound[] = [];
  for (const s of everyone.slice(senders.length)) await closedLoop(s, 4, plan.warmupSeconds, -1);
  for (let round = 0; round < plan.closedRounds; round++) {
    for (const s of shuffle([...everyone], random)) {
      const r = await closedLoop(s, 1, plan.closedSeconds, round);
      log(
        `  serial round ${round + 1}/${plan.closedRounds} ${s.target.name}: p50 ${r.latency.p50_ms.toFixed(2)} ms`,
      );
      serial.push(r);
    }
  }
  return serial;
}

async function streamPhase({ plan, senders, random }: Run): Promise<StreamFigures[]> {
  log(`  streaming: ${plan.streams} requests per target, one at a time, interleaved`);
  const ttft = new Map<string, number[]>(senders.map((s) => [s.target.name, []]));
  const totals = new Map<string, number[]>(senders.map((s) => [s.target.name, []]));
  const streamErrors = new Map<string, number>(senders.map((s) => [s.target.name, 0]));
  for (let i = 0; i < plan.streams; i++) {
    for (const s of shuffle([...senders], random)) {
      const r = await streamOnce(s, i);
      const name = s.target.name;
      if (r === null) streamErrors.set(name, (streamErrors.get(name) ?? 0) + 1);
      else {
        ttft.get(name)?.push(r.ttft);
        totals.get(name)?.push(r.total);
      }
    }
  }
  return senders.map((s) => ({
    target: s.target.name,
    ok: ttft.get(s.target.name)?.length ?? 0,
    errors: streamErrors.get(s.target.name) ?? 0,
    ttft: summary(ttft.get(s.target.name) ?? []),
    total: summary(totals.get(s.target.name) ?? []),
  }));
}

function sender(plan: LoadPlan, target: LoadTarget): Sender {
  const request = { model: target.model ?? "echo", messages: [{ role: "user", content: plan.prompt }] };
  const pool = (origin: string) =>
    new Pool(origin, {
      connections: Math.max(256, plan.closedClients),
      pipelining: 1,
      keepAliveTimeout: 60_000,
    });
  return {
    target,
    pools: [target.origin, ...(target.peers ?? [])].map(pool),
    body: JSON.stringify(request),
    streamBody: JSON.stringify({ ...request, stream: true }),
  };
}

async function main(): Promise<void> {
  const plan = JSON.parse(process.argv[2] ?? "{}") as LoadPlan;
  const senders = plan.targets.map((t) => sender(plan, t));
  const everyone = [...senders, ...plan.diagnosticTargets.map((t) => sender(plan, t))];
  const run: Run = { plan, senders, everyone, random: seededRandom(plan.seed) };
  const phases = new Set<LoadPhase>(plan.phases ?? LOAD_PHASES);

  for (const s of senders) {
    log(`  warm-up: ${s.target.name}, ${plan.warmupSeconds} s at ${plan.rps}/s`);
    await openLoop(s, plan.rps, plan.warmupSeconds, -1);
  }
  const result: LoadResult = {
    open: phases.has("open") ? await openPhase(run) : [],
    closed: phases.has("closed") ? await closedPhase(run) : [],
    serial: phases.has("serial") ? await serialPhase(run) : [],
    stream: phases.has("stream") ? await streamPhase(run) : [],
    error_samples: errorSamples,
    error_kinds: errorKinds,
  };
  await Promise.all(everyone.flatMap((s) => s.pools.map((p) => p.close())));
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
