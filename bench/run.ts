// `npm run bench`: store write throughput, search latency, open and integrity check, reader
// figures, and the cost per model call of the resilience layer, printed as tables and written as
// JSON to bench/out; streamed text against its length, and the memory 1,000 finished subagents
// leave behind; the gateway's added latency, throughput and first-token time beside Portkey's
// gateway (bench/gateway-peer.ts); and what Fastify and Hono add to one route over node:http
// (bench/http-framework.ts); and what the store's continuous verification costs and how soon it
// finds damage (bench/store-verify.ts); and several gateways on one PostgreSQL against one on
// SQLite, with the takeover time after kill -9 (bench/gateways-shared.ts); and one agent turn
// profiled: its commits, syncs, statements, bytes and CPU by part (bench/turn-profile.ts). Every
// knob is an environment variable (see BENCH_* below); BENCH_MESSAGES sets the size of the search
// store (default 1M). Suites named as arguments (`npm run bench -- gateways`) run alone, as BENCH_ONLY.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { z } from "zod";
import { openStore, releaseStore } from "../src/store/registry.js";
import { runAppendSizes, type SizeRow } from "./append-sizes.js";
import { type CronBenchResult, runCronBench } from "./cron.js";
import { cronLines, judgeCronAims } from "./cron-report.js";
import {
  type GatewayPeerResult,
  gatewayLines,
  judgeGatewayAims,
  runGatewayPeerBench,
} from "./gateway-peer.js";
import {
  judgeSharedAims,
  runSharedGatewaysBench,
  type SharedGatewaysOutcome,
  sharedLines,
} from "./gateways-shared.js";
import {
  type FrameworkResult,
  frameworkLines,
  judgeFrameworkAims,
  runFrameworkBench,
} from "./http-framework.js";
import { describeMachine } from "./machine.js";
import { type ColdResult, type OpenResult, runColdOpenBench, runOpenBench } from "./open-integrity.js";
import { type ReaderResult, runReaderBench } from "./reader-open.js";
import { int, judgeAims, judgeRouterAim, mib, ms, table } from "./report.js";
import { judgeRestartAims, type RestartResult, restartLines, runRestartBench } from "./restart.js";
import { judgeResumeAim, type ResumeBenchResult, resumeLines, runResumeBench } from "./resume.js";
import { MICRO_VARIANTS, type RouterMicroResult, runRouterMicroBench } from "./router-micro.js";
import {
  ROUTER_VARIANTS,
  type RouterHttpResult,
  runRouterHttpBench,
  sampleSseBody,
} from "./router-overhead.js";
import { diagnoseSearch, type SearchDiagnosis } from "./search-diagnosis.js";
import { QUERY_KINDS, queryMix, runSearchBench, type SearchResultSet } from "./search-latency.js";
import { judgeSlowDiskAim, runSlowDiskBench, type SlowDiskResult, slowDiskLines } from "./slow-disk.js";
import { median } from "./stats.js";
import { ensureFixture } from "./store-fixture.js";
import { judgeVerifyAims, runVerifyBench, type VerifyResult, verifyLines } from "./store-verify.js";
import { judgeStreamAim, runStreamBench, type StreamResult, streamLines } from "./stream-text.js";
import { judgeSubagentAim, runSubagentBench, type SubagentResult, subagentLines } from "./subagents.js";
import { runTurnProfileBench, type TurnProfileResult, turnProfileLines } from "./turn-profile.js";
import { diagnoseWrites, type WriteDiagnosis } from "./write-diagnosis.js";
import { runWriteBench, type WriteResult } from "./write-throughput.js";

const count = (fallback: number) =>
  z.preprocess(
    (v) => (typeof v === "string" ? v.replace(/[_,]/g, "") : v),
    z.coerce.number().int().positive().default(fallback),
  );

const SUITES = [
  "write",
  "sizes",
  "search",
  "open",
  "reader",
  "router",
  "stream",
  "subagents",
  "resume",
  "restart",
  "gateway",
  "framework",
  "slowdisk",
  "cron",
  "verify",
  "gateways",
  "turn-profile",
] as const;

const Env = z.object({
  BENCH_MESSAGES: count(1_000_000),
  BENCH_BASE_MESSAGES: count(50_000),
  BENCH_ROUNDS: count(5),
  BENCH_TRIAL_SECONDS: z.coerce.number().positive().default(2),
  BENCH_TRIAL_MESSAGES: count(50_000),
  BENCH_QUERIES: count(20),
  BENCH_SEARCH_ROUNDS: count(10),
  BENCH_OPEN_REPEATS: count(3),
  BENCH_CHECK_REPEATS: count(3),
  BENCH_READER_REPEATS: count(20),
  BENCH_ROUTER_CALLS: count(5000),
  BENCH_ROUTER_WARMUP: count(500),
  BENCH_MICRO_ROUNDS: count(20),
  BENCH_MICRO_BATCH: count(1000),
  BENCH_STREAM_SIZES: z
    .string()
    .default("25,50,100,200,400")
    .transform((s) => s.split(",").map((x) => Number(x.trim())))
    .pipe(z.array(z.number().int().positive())),
  BENCH_STREAM_REPEATS: count(7),
  BENCH_SUBAGENTS: count(1000),
  BENCH_SUBAGENT_SNAPSHOTS: z.string().optional(),
  BENCH_RESUME_SESSIONS: count(100),
  /** The provider's max_concurrency in the resume suite (8 is the config default). */
  BENCH_RESUME_CONCURRENCY: count(8),
  /** The gateway suite: open-loop rate, seconds per target (split over rounds), closed-loop clients. */
  BENCH_SLOWDISK_DELAY_MS: z.coerce.number().positive().default(10),
  BENCH_SLOWDISK_CLIENTS: count(16),
  BENCH_SLOWDISK_SECONDS: z.coerce.number().positive().default(4),
  BENCH_SLOWDISK_ROUNDS: count(3),
  BENCH_GATEWAY_RPS: count(500),
  BENCH_GATEWAY_SECONDS: z.coerce.number().positive().default(20),
  BENCH_GATEWAY_ROUNDS: count(5),
  BENCH_GATEWAY_WARMUP_SECONDS: z.coerce.number().positive().default(2),
  BENCH_GATEWAY_CLIENTS: count(64),
  BENCH_GATEWAY_CLOSED_SECONDS: z.coerce.number().positive().default(3),
  BENCH_GATEWAY_CLOSED_ROUNDS: count(3),
  BENCH_GATEWAY_STREAMS: count(300),
  /** A built Tenax checkout from before the store port, measured beside today's as tenax_before. */
  BENCH_TENAX_BEFORE: z.string().min(1).optional(),
  /** The framework suite: open-loop seconds per variant (split over rounds), rounds, in-process calls. */
  BENCH_FRAMEWORK_SECONDS: z.coerce.number().positive().default(15),
  BENCH_FRAMEWORK_ROUNDS: count(3),
  BENCH_FRAMEWORK_INPROC_ROUNDS: count(10),
  BENCH_FRAMEWORK_INPROC_BATCH: count(200),
  /** The cron suite: jobs due at one instant, gateway.max_turns, the cron.max_concurrent values, jobs defined for the lag run and its seconds. */
  BENCH_CRON_JOBS: count(1000),
  BENCH_CRON_MAX_TURNS: count(16),
  BENCH_CRON_CONCURRENCY: z
    .string()
    .default("16,4")
    .transform((s) => s.split(",").map((x) => Number(x.trim())))
    .pipe(z.array(z.number().int().positive())),
  BENCH_CRON_LAG_JOBS: count(10_000),
  BENCH_CRON_LAG_SECONDS: count(150),
  BENCH_CRON_CHANGE_SECONDS: z.coerce.number().int().min(0).default(10),
  /** The verify suite: the store's size in messages (160,000: about 100 MB), seconds run, its settings, damage trials. */
  BENCH_VERIFY_MESSAGES: count(160_000),
  BENCH_VERIFY_SECONDS: z.coerce.number().positive().default(300),
  BENCH_VERIFY_BASELINE_SECONDS: z.coerce.number().positive().default(60),
  BENCH_VERIFY_INTERVAL: z.coerce.number().positive().default(120),
  BENCH_VERIFY_CPU_PERCENT: z.coerce.number().positive().max(100).default(1),
  BENCH_VERIFY_TRIALS: count(3),
  BENCH_VERIFY_REPEATS: count(3),
  /** The gateways suite: closed-loop sizes, seconds per configuration per round, rounds, most gateways on PostgreSQL, kills. */
  BENCH_GATEWAYS_CLIENTS: z
    .string()
    .default("16,64")
    .transform((s) => s.split(",").map((x) => Number(x.trim())))
    .pipe(z.array(z.number().int().positive())),
  BENCH_GATEWAYS_SECONDS: z.coerce.number().positive().default(4),
  BENCH_GATEWAYS_ROUNDS: count(5),
  BENCH_GATEWAYS_MAX: z.coerce.number().int().min(2).default(3),
  BENCH_GATEWAYS_KILLS: count(10),
  /** The turn-profile suite: turns measured, warm-up turns, µs between CPU profile samples. */
  BENCH_TURN_PROFILE_TURNS: count(500),
  BENCH_TURN_PROFILE_WARMUP: count(200),
  BENCH_TURN_PROFILE_CPU_INTERVAL_US: count(100),
  BENCH_ONLY: z
    .string()
    .default(SUITES.join(","))
    .transform((s) => s.split(",").map((x) => x.trim()))
    .pipe(z.array(z.enum(SUITES))),
  BENCH_OUT: z.string().default("bench/out"),
});

const log = (line: string) => process.stderr.write(`${line}\n`);

/** The commit measured, and whether src/store or src/llm had changes on top of it (read-only git commands). */
function sourceVersion(): { commit: string; store_changes: string[]; llm_changes: string[] } {
  try {
    const git = (...args: string[]) => execFileSync("git", args, { encoding: "utf8" }).trim();
    const changed = (dir: string) => {
      const lines = git("status", "--porcelain", "--", dir);
      return lines === "" ? [] : lines.split("\n");
    };
    return {
      commit: git("rev-parse", "--short", "HEAD"),
      store_changes: changed("src/store"),
      llm_changes: changed("src/llm"),
    };
  } catch {
    return { commit: "unknown", store_changes: [], llm_changes: [] };
  }
}

async function main(): Promise<void> {
  const names = process.argv.slice(2);
  const env = Env.parse({
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BENCH_"))),
    ...(names.length > 0 ? { BENCH_ONLY: names.join(",") } : {}),
  });
  const out = resolve(env.BENCH_OUT);
  const work = join(out, `work-${process.pid}`);
  mkdirSync(work, { recursive: true });
  try {
    await runAll(env, out, work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function runAll(env: z.infer<typeof Env>, out: string, work: string): Promise<void> {
  const started = new Date();
  const machine = describeMachine(out);
  const only = new Set(env.BENCH_ONLY);
  log(`tenax bench: ${machine.nproc} CPUs, node ${machine.node}, SQLite ${machine.sqlite}`);

  let write: WriteResult | null = null;
  let writeDiagnosis: WriteDiagnosis | null = null;
  if (only.has("write")) {
    log(`write throughput: base store of ${int(env.BENCH_BASE_MESSAGES)} messages`);
    const base = await ensureFixture(out, env.BENCH_BASE_MESSAGES, log);
    write = await runWriteBench(base, {
      rounds: env.BENCH_ROUNDS,
      trialSeconds: env.BENCH_TRIAL_SECONDS,
      trialMessages: env.BENCH_TRIAL_MESSAGES,
      workDir: work,
      log,
    });
    if (judgeAims(write.rows, null, 0).some((a) => !a.met)) {
      log("a write aim was missed: diagnosing");
      writeDiagnosis = await diagnoseWrites(base, work, 3, env.BENCH_TRIAL_SECONDS, log);
    }
  }

  let sizes: SizeRow[] | null = null;
  if (only.has("sizes")) {
    log("batched appends by message size");
    sizes = await runAppendSizes(work, env.BENCH_TRIAL_MESSAGES, env.BENCH_ROUNDS);
  }

  let search: SearchResultSet | null = null;
  let diagnosis: SearchDiagnosis | null = null;
  let open: OpenResult | null = null;
  let reader: ReaderResult | null = null;
  let cold: ColdResult | null = null;
  let fixtureInfo: Record<string, unknown> | null = null;
  if (only.has("search") || only.has("open") || only.has("reader")) {
    log(`big store: ${int(env.BENCH_MESSAGES)} messages`);
    const big = await ensureFixture(out, env.BENCH_MESSAGES, log);
    fixtureInfo = {
      messages: big.meta.messages,
      sessions: big.meta.sessions,
      cached: big.cached,
      build: big.meta.build,
    };
    log(big.cached ? "  using the cached store" : `  built in ${big.meta.build.total_s.toFixed(0)} s`);
    if (only.has("open")) {
      log("open and integrity check");
      open = await runOpenBench(big.paths, env.BENCH_OPEN_REPEATS, env.BENCH_CHECK_REPEATS, log);
    }
    if (only.has("search")) {
      log("search latency");
      const store = await openStore(big.paths, { integrityCheckTimeoutMs: 0 });
      try {
        const queries = queryMix(big.meta.samples, env.BENCH_QUERIES);
        search = await runSearchBench(store, queries, env.BENCH_SEARCH_ROUNDS, log);
        if (search.overall.p95_ms >= 20) {
          log("search p95 missed the aim: diagnosing");
          diagnosis = diagnoseSearch(store, big.paths, search, log);
        }
      } finally {
        await releaseStore(store);
      }
    }
    if (only.has("reader")) {
      log("reader");
      reader = await runReaderBench(big.paths, big.meta.session_200, env.BENCH_READER_REPEATS);
    }
    if (only.has("open")) {
      log("open and integrity check with a cold file cache");
      cold = await runColdOpenBench(big.paths, log);
    }
  }

  let router: RouterHttpResult | null = null;
  let routerMicro: RouterMicroResult | null = null;
  if (only.has("router")) {
    log("resilience layer per call over real HTTP, against bare fetch and the bare SDK");
    router = await runRouterHttpBench(work, {
      calls: env.BENCH_ROUTER_CALLS,
      warmup: env.BENCH_ROUTER_WARMUP,
      log,
    });
    log("resilience layer per call without HTTP");
    routerMicro = await runRouterMicroBench(work, await sampleSseBody(), {
      rounds: env.BENCH_MICRO_ROUNDS,
      batch: env.BENCH_MICRO_BATCH,
    });
  }

  let stream: StreamResult | null = null;
  if (only.has("stream")) {
    log(`streamed text of ${env.BENCH_STREAM_SIZES.join(", ")} KB in 4-character deltas`);
    stream = await runStreamBench(work, {
      sizesKb: env.BENCH_STREAM_SIZES,
      repeats: env.BENCH_STREAM_REPEATS,
      log,
    });
  }

  let subagents: SubagentResult | null = null;
  if (only.has("subagents")) {
    log(`${int(env.BENCH_SUBAGENTS)} subagents through delegate_task, heap measured in a child process`);
    subagents = await runSubagentBench(
      work,
      {
        subagents: env.BENCH_SUBAGENTS,
        perTurn: 100,
        perStep: 10,
        warmup: 20,
        maxSubagents: 3,
        ...(env.BENCH_SUBAGENT_SNAPSHOTS ? { snapshotDir: resolve(env.BENCH_SUBAGENT_SNAPSHOTS) } : {}),
      },
      log,
    );
  }

  let restart: RestartResult | null = null;
  if (only.has("restart")) {
    log("restart to healthy: a real gateway process stopped and started again");
    restart = await runRestartBench(
      work,
      { restarts: 7, sessions: 2000, messagesPerSession: 10, healthRequests: 500 },
      log,
    );
  }

  let resume: ResumeBenchResult | null = null;
  if (only.has("resume")) {
    log(`resume of ${int(env.BENCH_RESUME_SESSIONS)} sessions a crash interrupted`);
    resume = await runResumeBench(
      work,
      { sessions: env.BENCH_RESUME_SESSIONS, maxConcurrency: env.BENCH_RESUME_CONCURRENCY },
      log,
    );
  }

  let gateway: GatewayPeerResult | null = null;
  if (only.has("gateway")) {
    log(`gateway vs Portkey: open loop at ${env.BENCH_GATEWAY_RPS}/s, closed loop, streaming first token`);
    gateway = await runGatewayPeerBench(
      work,
      {
        rps: env.BENCH_GATEWAY_RPS,
        seconds: env.BENCH_GATEWAY_SECONDS,
        rounds: env.BENCH_GATEWAY_ROUNDS,
        warmupSeconds: env.BENCH_GATEWAY_WARMUP_SECONDS,
        closedClients: env.BENCH_GATEWAY_CLIENTS,
        closedSeconds: env.BENCH_GATEWAY_CLOSED_SECONDS,
        closedRounds: env.BENCH_GATEWAY_CLOSED_ROUNDS,
        streams: env.BENCH_GATEWAY_STREAMS,
        beforeCheckout: env.BENCH_TENAX_BEFORE,
      },
      log,
    );
  }

  let framework: FrameworkResult | null = null;
  if (only.has("framework")) {
    log(`HTTP framework: node:http, Fastify and Hono on one route, open loop at ${env.BENCH_GATEWAY_RPS}/s`);
    framework = await runFrameworkBench(
      {
        rps: env.BENCH_GATEWAY_RPS,
        seconds: env.BENCH_FRAMEWORK_SECONDS,
        rounds: env.BENCH_FRAMEWORK_ROUNDS,
        warmupSeconds: env.BENCH_GATEWAY_WARMUP_SECONDS,
        closedClients: env.BENCH_GATEWAY_CLIENTS,
        closedSeconds: env.BENCH_GATEWAY_CLOSED_SECONDS,
        streams: env.BENCH_GATEWAY_STREAMS,
        inProcessRounds: env.BENCH_FRAMEWORK_INPROC_ROUNDS,
        inProcessBatch: env.BENCH_FRAMEWORK_INPROC_BATCH,
      },
      log,
    );
  }

  let slowDisk: SlowDiskResult | null = null;
  if (only.has("slowdisk")) {
    log(`slow disk: each sync ${env.BENCH_SLOWDISK_DELAY_MS} ms longer, the sync off and on the event loop`);
    slowDisk = await runSlowDiskBench(
      work,
      {
        syncDelayMs: env.BENCH_SLOWDISK_DELAY_MS,
        clients: env.BENCH_SLOWDISK_CLIENTS,
        seconds: env.BENCH_SLOWDISK_SECONDS,
        rounds: env.BENCH_SLOWDISK_ROUNDS,
        healthEveryMs: 5,
      },
      log,
    );
  }

  let cron: CronBenchResult | null = null;
  if (only.has("cron")) {
    log("cron: a burst of jobs due at one instant, then the scheduler's lag with many jobs defined");
    cron = await runCronBench(
      work,
      {
        burstJobs: env.BENCH_CRON_JOBS,
        maxTurns: env.BENCH_CRON_MAX_TURNS,
        concurrencies: env.BENCH_CRON_CONCURRENCY,
        lagJobs: env.BENCH_CRON_LAG_JOBS,
        lagSeconds: env.BENCH_CRON_LAG_SECONDS,
        changeEverySeconds: env.BENCH_CRON_CHANGE_SECONDS,
      },
      log,
    );
  }

  let verify: VerifyResult | null = null;
  if (only.has("verify")) {
    log(`store verification: a store of ${int(env.BENCH_VERIFY_MESSAGES)} messages`);
    const fixture = await ensureFixture(out, env.BENCH_VERIFY_MESSAGES, log);
    verify = await runVerifyBench(
      fixture,
      work,
      {
        seconds: env.BENCH_VERIFY_SECONDS,
        baselineSeconds: env.BENCH_VERIFY_BASELINE_SECONDS,
        intervalS: env.BENCH_VERIFY_INTERVAL,
        cpuPercent: env.BENCH_VERIFY_CPU_PERCENT,
        trials: env.BENCH_VERIFY_TRIALS,
        engineRepeats: env.BENCH_VERIFY_REPEATS,
      },
      log,
    );
  }

  let gateways: SharedGatewaysOutcome | null = null;
  if (only.has("gateways")) {
    log("several gateways on one PostgreSQL against one on SQLite, then takeovers after kill -9");
    gateways = await runSharedGatewaysBench(
      work,
      {
        clients: env.BENCH_GATEWAYS_CLIENTS,
        seconds: env.BENCH_GATEWAYS_SECONDS,
        rounds: env.BENCH_GATEWAYS_ROUNDS,
        warmupSeconds: env.BENCH_GATEWAY_WARMUP_SECONDS,
        gateways: env.BENCH_GATEWAYS_MAX,
        kills: env.BENCH_GATEWAYS_KILLS,
      },
      log,
    );
  }

  let turnProfile: TurnProfileResult | null = null;
  if (only.has("turn-profile")) {
    log(`one agent turn, profiled: ${int(env.BENCH_TURN_PROFILE_TURNS)} turns one at a time, three runs`);
    turnProfile = await runTurnProfileBench(
      work,
      out,
      {
        turns: env.BENCH_TURN_PROFILE_TURNS,
        warmup: env.BENCH_TURN_PROFILE_WARMUP,
        cpuIntervalUs: env.BENCH_TURN_PROFILE_CPU_INTERVAL_US,
      },
      log,
    );
  }

  const aims = [
    ...judgeAims(write?.rows ?? null, search, env.BENCH_MESSAGES),
    ...(router ? [judgeRouterAim(router)] : []),
    ...(stream ? [judgeStreamAim(stream)] : []),
    ...(subagents ? [judgeSubagentAim(subagents)] : []),
    ...(resume ? [judgeResumeAim(resume)] : []),
    ...(restart ? judgeRestartAims(restart) : []),
    ...(gateway ? judgeGatewayAims(gateway) : []),
    ...(framework ? judgeFrameworkAims(framework) : []),
    ...(slowDisk ? [judgeSlowDiskAim(slowDisk)] : []),
    ...(cron ? judgeCronAims(cron) : []),
    ...(verify ? judgeVerifyAims(verify) : []),
    ...(gateways ? judgeSharedAims(gateways) : []),
  ];
  const result = {
    started_at: started.toISOString(),
    duration_s: (Date.now() - started.getTime()) / 1000,
    command: process.argv.slice(1).join(" "),
    source: sourceVersion(),
    settings: env,
    machine: { ...machine, load_after: loadavg() },
    fixture: fixtureInfo,
    write,
    write_diagnosis: writeDiagnosis,
    sizes,
    search,
    search_diagnosis: diagnosis,
    open,
    open_cold: cold,
    reader,
    router,
    router_micro: routerMicro,
    stream,
    subagents,
    resume,
    restart,
    gateway,
    framework,
    slow_disk: slowDisk,
    cron,
    verify,
    gateways,
    turn_profile: turnProfile,
    aims,
  };
  const name = `bench-${started.toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(join(out, name), `${JSON.stringify(result, null, 2)}\n`);
  writeFileSync(join(out, "latest.json"), `${JSON.stringify(result, null, 2)}\n`);
  print(result);
  log(`\nwritten: ${join(out, name)} (and latest.json)`);
}

function print(r: {
  machine: ReturnType<typeof describeMachine> & { load_after: number[] };
  write: WriteResult | null;
  write_diagnosis: WriteDiagnosis | null;
  sizes: SizeRow[] | null;
  search: SearchResultSet | null;
  search_diagnosis: SearchDiagnosis | null;
  open: OpenResult | null;
  open_cold: ColdResult | null;
  reader: ReaderResult | null;
  router: RouterHttpResult | null;
  router_micro: RouterMicroResult | null;
  stream: StreamResult | null;
  subagents: SubagentResult | null;
  resume: ResumeBenchResult | null;
  restart: RestartResult | null;
  gateway: GatewayPeerResult | null;
  framework: FrameworkResult | null;
  slow_disk: SlowDiskResult | null;
  cron: CronBenchResult | null;
  verify: VerifyResult | null;
  gateways: SharedGatewaysOutcome | null;
  turn_profile: TurnProfileResult | null;
  source: ReturnType<typeof sourceVersion>;
  aims: ReturnType<typeof judgeAims>;
  fixture: Record<string, unknown> | null;
}): void {
  const m = r.machine;
  const lines: string[] = [];
  lines.push(
    `\nmachine: ${m.nproc} x ${m.cpu}, ${m.memory_gib} GiB, node ${m.node}, SQLite ${m.sqlite} (better-sqlite3 ${m.better_sqlite3})`,
    `source: commit ${r.source.commit}${r.source.store_changes.length > 0 ? ` + ${r.source.store_changes.length} changed files in src/store` : ""}${r.source.llm_changes.length > 0 ? ` + ${r.source.llm_changes.length} changed files in src/llm` : ""}`,
    `disk: ${m.disk}; 4 KiB write+fsync median ${ms(m.fsync_4k_ms)} ms; load ${m.load_before.map((x) => x.toFixed(2)).join(" ")} -> ${m.load_after.map((x) => x.toFixed(2)).join(" ")}`,
  );
  if (r.sizes) {
    lines.push(
      "\nbatched appends by message size (batches of 1,000, synchronous=normal, re-read on)",
      table(
        ["chars", "messages/s", "content MiB/s"],
        r.sizes.map((z) => [String(z.chars), int(z.messages_per_s), z.content_mib_per_s.toFixed(1)]),
      ),
    );
  }
  if (r.write) {
    lines.push(
      `\nappends (median of ${r.write.options.rounds} rounds, base store ${int(r.write.base_messages)} messages)`,
      table(
        ["mode", "synchronous", "reread", "appended/s", "index flush/s", "append+flush/s"],
        r.write.rows.map((w) => [
          w.mode,
          w.synchronous,
          String(w.reread),
          int(w.append_per_s),
          int(w.flush_per_s),
          int(w.end_to_end_per_s),
        ]),
      ),
      "\npage re-read cost (appends/s with reread=false divided by reread=true, median of paired rounds)",
      table(
        ["mode", "synchronous", "speed-up without re-read"],
        r.write.reread_cost.map((c) => [c.mode, c.synchronous, `x${c.speedup_without_reread.toFixed(2)}`]),
      ),
    );
  }
  if (r.write_diagnosis) lines.push(...r.write_diagnosis.lines);
  if (r.search) {
    const s = r.search;
    lines.push(
      `\nsearch latency, Store.search(q, {limit: 20}) (${s.queries_per_kind} queries per kind x ${s.rounds} rounds)`,
      table(
        ["kind", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"],
        [...QUERY_KINDS.map((k) => [k, s.by_kind[k]] as const), ["overall", s.overall] as const].map(
          ([k, l]) => [k, String(l.n), ms(l.p50_ms), ms(l.p95_ms), ms(l.p99_ms), ms(l.max_ms)],
        ),
      ),
    );
  }
  if (r.search_diagnosis) lines.push(...r.search_diagnosis.lines);
  if (r.open) {
    const o = r.open;
    const c = r.open_cold;
    const openRow = (label: string, f: OpenResult["open_default"]) => [
      label,
      ms(f.median_ms),
      "",
      String(f.ms.length),
      `${f.status.join(",")}; state.db check ${ms(median(f.state_check_ms))} ms`,
    ];
    const checkRow = (label: string, f: OpenResult["quick_check"]) => [
      label,
      ms(f.median_wall_ms),
      ms(f.median_state_ms),
      String(f.wall_ms.length),
      f.status,
    ];
    const s = o.search_db_quick_check;
    lines.push(
      "\nopen and integrity check (big store; warm file cache unless marked cold)",
      table(
        ["step", "call ms", "state.db ms", "runs", "result"],
        [
          openRow("Store.open, default integrity budget", o.open_default),
          [
            "Store.open, integrity check off",
            ms(o.open_no_check.median_ms),
            "",
            String(o.open_no_check.ms.length),
            "",
          ],
          checkRow("checkIntegrity('quick')", o.quick_check),
          checkRow("checkIntegrity('full')", o.integrity_check),
          ...(c
            ? [
                checkRow("checkIntegrity('quick'), cold", c.quick_check),
                openRow("Store.open, default budget, cold", c.open_default),
              ]
            : []),
        ],
      ),
      "  (checkIntegrity also checks search.db, in parallel, and resolves when both are done)",
      `search.db PRAGMA quick_check: ${ms(s.whole_ms)} ms; its plain tables alone ${ms(s.plain_tables_ms)} ms; ` +
        `the FTS5 table's own check (quick_check(fts)) ${ms(s.fts_virtual_table_ms)} ms`,
      `files: ${Object.entries(o.bytes)
        .map(([k, v]) => `${k} ${mib(v)}`)
        .join(", ")}`,
    );
  }
  if (r.reader) {
    const d = r.reader;
    lines.push(
      `\nreader on the big store (${d.repeats} repeats, a new reader each time)`,
      table(
        ["step", "first ms", "median ms", "p95 ms"],
        [
          ["openReader", d.open],
          [`listSessions (${d.list_sessions.sessions} rows)`, d.list_sessions],
          [`getMessages (${d.get_messages.messages} messages)`, d.get_messages],
        ].map(([label, s]) => {
          const step = s as { first_ms: number; median_ms: number; p95_ms: number };
          return [label as string, ms(step.first_ms), ms(step.median_ms), ms(step.p95_ms)];
        }),
      ),
    );
  }
  if (r.router) lines.push(...routerLines(r.router));
  if (r.router_micro) lines.push(...microLines(r.router_micro));
  if (r.stream) lines.push(...streamLines(r.stream));
  if (r.subagents) lines.push(...subagentLines(r.subagents));
  if (r.resume) lines.push(...resumeLines(r.resume));
  if (r.restart) lines.push(...restartLines(r.restart));
  if (r.gateway) lines.push(...gatewayLines(r.gateway));
  if (r.framework) lines.push(...frameworkLines(r.framework));
  if (r.slow_disk) lines.push("", ...slowDiskLines(r.slow_disk));
  if (r.cron) lines.push(...cronLines(r.cron));
  if (r.verify) lines.push(...verifyLines(r.verify));
  if (r.gateways) lines.push(...sharedLines(r.gateways));
  if (r.turn_profile) lines.push(...turnProfileLines(r.turn_profile));
  lines.push(
    "\naims",
    table(
      ["aim", "status", "detail"],
      r.aims.map((a) => [a.aim, a.met ? "met" : "NOT MET", a.detail]),
    ),
  );
  process.stdout.write(`${lines.join("\n")}\n`);
}

const VARIANT_LABELS: Record<(typeof ROUTER_VARIANTS)[number], string> = {
  fetch: "bare fetch, SSE body read to the end",
  sdk: "bare OpenAI SDK, stream:true",
  provider: "Tenax OpenAI provider alone",
  router_memory: "router.turn().complete, memory ledger",
  router_sqlite: "router.turn().complete, SQLite ledger",
  router_signal: "the same, memory ledger, signal + listener",
};

function routerLines(r: RouterHttpResult): string[] {
  const v = r.by_variant;
  const p = r.paired_added_p50_ms;
  const over = (a: number, b: number) => `${a >= b ? "+" : ""}${ms3(a - b)}`;
  const ratio = (a: number, b: number) => `x${(a / b).toFixed(2)}`;
  return [
    `\nresilience layer per call, simulator over HTTP (${int(r.calls)} calls each after ${int(r.warmup)} warm-up, interleaved, one at a time; reply ${r.reply_chars} chars)`,
    table(
      [
        "variant",
        "p50 ms",
        "p99 ms",
        "mean ms",
        "p50 over SDK",
        "mean over SDK",
        "mean / fetch",
        "mean / SDK",
      ],
      ROUTER_VARIANTS.map((k) => [
        VARIANT_LABELS[k],
        ms3(v[k].p50_ms),
        ms3(v[k].p99_ms),
        ms3(v[k].mean_ms),
        k === "sdk" ? "" : over(v[k].p50_ms, v.sdk.p50_ms),
        k === "sdk" ? "" : over(v[k].mean_ms, v.sdk.mean_ms),
        ratio(v[k].mean_ms, v.fetch.mean_ms),
        ratio(v[k].mean_ms, v.sdk.mean_ms),
      ]),
    ),
    `  paired (same round) median added over the SDK: router ${ms3(p.memory_over_sdk)} ms (memory ledger), ` +
      `${ms3(p.sqlite_over_sdk)} ms (SQLite ledger), ${ms3(p.signal_over_sdk)} ms (memory, signal + listener);`,
    `  of the memory-ledger figure, the provider client ${ms3(p.provider_over_sdk)} ms and the router's layers ` +
      `${ms3(p.memory_over_provider)} ms; the SDK itself is ${ms3(p.sdk_over_fetch)} ms over bare fetch`,
  ];
}

const MICRO_LABELS: Record<(typeof MICRO_VARIANTS)[number], string> = {
  provider_direct: "a provider that answers at once, called directly",
  layer_memory: "the same through router.turn().complete, memory ledger",
  layer_sqlite: "the same through router.turn().complete, SQLite ledger",
  layer_memory_tools: "the same, memory ledger, request with 20 tools",
  sdk_canned: "bare OpenAI SDK on a canned SSE response",
  openai_provider_canned: "Tenax OpenAI provider on the same canned response",
};

function microLines(r: RouterMicroResult): string[] {
  return [
    `\nresilience layer without HTTP (median of ${r.rounds} rounds of ${int(r.batch)} calls each, interleaved)`,
    table(
      ["variant", "µs per call"],
      MICRO_VARIANTS.map((k) => [MICRO_LABELS[k], r.us_per_call[k].toFixed(1)]),
    ),
  ];
}

/** Three decimals: the differences here are tens of microseconds. */
function ms3(n: number): string {
  return Number.isFinite(n) ? n.toFixed(3) : "-";
}

main().catch((error: unknown) => {
  log(error instanceof Error ? (error.stack ?? error.message) : String(error));
  process.exitCode = 1;
});
