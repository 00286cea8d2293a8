// Cron at scale, on the real clock (bench/cron-harness.ts: a real store, agent, simulator over
// HTTP and Gateway, the engine on the agent's Scheduler as src/gateway/run.ts wires it):
// 1. a burst: 1,000 jobs due at one instant, run through Gateway.launch within gateway.max_turns;
//    from the due instant to the last claim, the last run admitted, the last run ended; the peak of
//    turns in flight; one ok run record per job; one model call per run.
// 2. lag: 10,000 jobs defined (most daily, far from now; a few due every minute or once within
//    the next two minutes), run for a few minutes; how late each due claim was, the Scheduler's own
//    lag, what one refresh after a job change costs, and the memory.
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { listRuns, type RunRecord } from "../src/cron/records.js";
import { createJobs, openHarness, sleep } from "./cron-harness.js";
import { int, ms } from "./report.js";
import { quantile } from "./stats.js";

export interface BurstResult {
  form: "cron" | "once";
  schedule: string;
  jobs: number;
  max_turns: number;
  max_concurrent: number;
  provider_concurrency: number;
  create_ms: number;
  /** From the due instant, in ms: the last claim planned (its record's claimed_at, the pass's clock). */
  last_claim_planned_ms: number;
  /** The last claim committed (engine.stats().lag_ms.max, read once it is written). */
  last_claim_ms: number;
  /** The last run marked running in the store (its session made), and admitted by the gateway. */
  last_start_ms: number;
  last_launch_ms: number;
  last_end_ms: number;
  peak_in_flight: number;
  refused: number;
  run_records: number;
  jobs_with_one_ok_run: number;
  model_requests: number;
  chat_requests: number;
  lag: { p99_ms: number; max_ms: number; samples: number };
  warnings: string[];
}

export interface LagResult {
  jobs: number;
  daily: number;
  every_minute: number;
  one_shots: number;
  seconds: number;
  /** Seconds between job changes; 0: none. */
  change_every_s: number;
  create_ms: number;
  /** startOn itself: the first load is read in slices after it returns. */
  cold_load_ms: number;
  /** From startOn until the first tick, which waits for the whole first load, has passed. */
  first_load_ms: number;
  /** engine.changed() after one job's prompt changed: a look at every version, one job read. */
  refresh_ms: { n: number; p50: number; max: number };
  /** engine.stats().lag_ms at the end. */
  engine_lag: { p99_ms: number; max_ms: number; samples: number };
  /** claimed_at - occurrence of the on-time runs, from their records. */
  record_lag: { n: number; p50_ms: number; p99_ms: number; max_ms: number };
  /**
   * Scheduler.lag() read every second: the median last_ms, the worst max_ms (a minute's window)
   * over the whole run, and over the readings from 65 s after the start on (the start's first
   * load out of the window).
   */
  scheduler_lag: { max_ms: number; max_after_first_minute_ms: number; last_p50_ms: number };
  /** The event loop's delay over the run (perf_hooks), ms. */
  loop_delay: { p50_ms: number; p99_ms: number; max_ms: number };
  runs: number;
  runs_ok: number;
  memory: {
    before: NodeJS.MemoryUsage;
    after_create: NodeJS.MemoryUsage;
    after_start: NodeJS.MemoryUsage;
  };
  warnings: string[];
}

export interface CronBenchResult {
  bursts: BurstResult[];
  lag: LagResult;
}

export interface CronSettings {
  burstJobs: number;
  maxTurns: number;
  concurrencies: number[];
  lagJobs: number;
  lagSeconds: number;
  /** A job changed (as through /api/jobs) every this many seconds of the lag run; 0: none. */
  changeEverySeconds: number;
}

export async function runCronBench(
  workDir: string,
  s: CronSettings,
  log: (line: string) => void,
): Promise<CronBenchResult> {
  const bursts: BurstResult[] = [];
  for (const [i, c] of s.concurrencies.entries()) {
    // The first burst is a real 5-field schedule on a minute boundary; the others are one-shots
    // at one instant (the same claim and run path, without waiting for the next minute).
    const form = i === 0 ? "cron" : "once";
    log(`  burst: ${int(s.burstJobs)} jobs (${form}), max_turns ${s.maxTurns}, max_concurrent ${c}`);
    bursts.push(await runBurst(workDir, s.burstJobs, s.maxTurns, c, form, log));
  }
  const changes =
    s.changeEverySeconds === 0 ? "no job changed" : `a job changed every ${s.changeEverySeconds} s`;
  log(`  lag: ${int(s.lagJobs)} jobs for ${s.lagSeconds} s, ${changes}`);
  const lag = await runLag(workDir, s.lagJobs, s.lagSeconds, s.changeEverySeconds, log);
  return { bursts, lag };
}

async function runBurst(
  workDir: string,
  count: number,
  maxTurns: number,
  maxConcurrent: number,
  form: "cron" | "once",
  log: (line: string) => void,
): Promise<BurstResult> {
  const h = await openHarness(workDir, { maxTurns, maxConcurrent, providerConcurrency: maxTurns });
  try {
    const now = Date.now();
    // Far enough ahead that every job is written before it falls due.
    const due =
      form === "cron" ? Math.ceil((now + 30_000) / 60_000) * 60_000 : Math.ceil((now + 15_000) / 1000) * 1000;
    const at = new Date(due);
    const schedule = form === "cron" ? `${at.getUTCMinutes()} ${at.getUTCHours()} * * *` : at.toISOString();
    const specs = Array.from({ length: count }, (_, i) => ({
      name: `burst-${String(i).padStart(4, "0")}`,
      schedule,
      prompt: `burst job ${i}`,
    }));
    const t0 = performance.now();
    await createJobs(h.jobs, specs);
    const createMs = performance.now() - t0;
    if (Date.now() > due - 2_000)
      throw new Error(`writing ${count} jobs took ${Math.round(createMs)} ms, past their due time`);
    h.start();
    log(
      `    ${int(count)} jobs written in ${ms(createMs)} ms; due "${schedule}" in ${((due - Date.now()) / 1000).toFixed(1)} s`,
    );
    const deadline = due + 180_000;
    while (h.watch.finishedAt.length < count && Date.now() < deadline) await sleep(50);
    await h.engine.runner.idle();
    const runs = await listRuns(h.store);
    const byJob = new Map<string, RunRecord[]>();
    for (const r of runs) byJob.set(r.job, [...(byJob.get(r.job) ?? []), r]);
    const oneOk = [...byJob.values()].filter((rs) => rs.length === 1 && rs[0]?.state === "ok").length;
    const max = (xs: number[]) => (xs.length === 0 ? Number.NaN : Math.max(...xs) - due);
    const requests = h.sim.requests();
    const stats = h.engine.stats();
    const result: BurstResult = {
      form,
      schedule,
      jobs: count,
      max_turns: maxTurns,
      max_concurrent: maxConcurrent,
      provider_concurrency: maxTurns,
      create_ms: createMs,
      last_claim_planned_ms: max(runs.map((r) => r.claimed_at)),
      last_claim_ms: stats.lag_ms.samples === count ? stats.lag_ms.max : Number.NaN,
      last_start_ms: max(runs.flatMap((r) => (r.started_at === null ? [] : [r.started_at]))),
      last_launch_ms: max(h.watch.launchedAt),
      last_end_ms: max(runs.flatMap((r) => (r.ended_at === null ? [] : [r.ended_at]))),
      peak_in_flight: h.watch.peakInFlight,
      refused: h.watch.refused,
      run_records: runs.length,
      jobs_with_one_ok_run: oneOk,
      model_requests: requests.length,
      chat_requests: requests.filter((r) => r.path.endsWith("/chat/completions")).length,
      lag: { p99_ms: stats.lag_ms.p99, max_ms: stats.lag_ms.max, samples: stats.lag_ms.samples },
      warnings: h.watch.warnings.slice(0, 5),
    };
    log(
      `    last claim +${ms(result.last_claim_ms)} ms, last start +${ms(result.last_launch_ms)} ms, last end +${ms(result.last_end_ms)} ms; peak ${result.peak_in_flight} in flight`,
    );
    return result;
  } finally {
    await h.close();
  }
}

/** Minutes of the day at least `margin` minutes away from `minute` (both ways, around midnight). */
function farMinute(random: () => number, minute: number, margin: number): number {
  for (;;) {
    const m = Math.floor(random() * 1440);
    const d = Math.abs(m - minute);
    if (Math.min(d, 1440 - d) >= margin) return m;
  }
}

async function runLag(
  workDir: string,
  count: number,
  seconds: number,
  changeEvery: number,
  log: (line: string) => void,
): Promise<LagResult> {
  const h = await openHarness(workDir, { maxTurns: 16, maxConcurrent: 4, providerConcurrency: 8 });
  try {
    const gc = collector();
    const memory = () => {
      gc();
      return process.memoryUsage();
    };
    const before = memory();
    const now = new Date();
    const minute = now.getUTCHours() * 60 + now.getUTCMinutes();
    let seed = 42;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const everyMinute = 20;
    const oneShots = 20;
    const daily = count - everyMinute - oneShots;
    const specs: { name: string; schedule: string; prompt: string }[] = [];
    for (let i = 0; i < daily; i++) {
      const m = farMinute(random, minute, 30);
      specs.push({
        name: `daily-${i}`,
        schedule: `${m % 60} ${Math.floor(m / 60)} * * *`,
        prompt: `daily ${i}`,
      });
    }
    const t0 = performance.now();
    await createJobs(h.jobs, specs);
    // The frequent ones last, so their first occurrences fall inside the run.
    const soon: typeof specs = [];
    for (let i = 0; i < everyMinute; i++)
      soon.push({ name: `minutely-${i}`, schedule: "every 1m", prompt: `m ${i}` });
    const start = Date.now();
    for (let i = 0; i < oneShots; i++) {
      const at = new Date(Math.ceil((start + 20_000 + (i * (seconds - 40) * 1000) / oneShots) / 1000) * 1000);
      soon.push({ name: `once-${i}`, schedule: at.toISOString(), prompt: `o ${i}` });
    }
    await createJobs(h.jobs, soon, 5);
    const createMs = performance.now() - t0;
    const afterCreate = memory();
    log(`    ${int(count)} jobs written in ${(createMs / 1000).toFixed(1)} s`);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const t1 = performance.now();
    h.start();
    const coldMs = performance.now() - t1;
    await h.engine.tick();
    const firstLoadMs = performance.now() - t1;
    const afterStart = memory();
    log(
      `    startOn ${ms(coldMs)} ms; the first load of ${int(count)} jobs done by the first tick in ${ms(firstLoadMs)} ms`,
    );
    const ends = Date.now() + seconds * 1000;
    const refresh: number[] = [];
    const schedulerMax: number[] = [];
    const schedulerMaxLater: number[] = [];
    const startedAt = Date.now();
    const schedulerLast: number[] = [];
    let tick = 0;
    while (Date.now() < ends) {
      await sleep(1000);
      const lag = h.agent.scheduler.lag();
      schedulerMax.push(lag.max_ms);
      if (Date.now() - startedAt > 65_000) schedulerMaxLater.push(lag.max_ms);
      schedulerLast.push(lag.last_ms);
      if (changeEvery > 0 && ++tick % changeEvery === 0) {
        // A job changed through /api/jobs: the route calls engine.changed().
        await h.jobs.update(`daily-${tick}`, { prompt: `daily ${tick}, changed` });
        const t = performance.now();
        await h.engine.changed();
        refresh.push(performance.now() - t);
      }
    }
    loop.disable();
    await h.engine.runner.idle();
    const stats = h.engine.stats();
    const runs = (await listRuns(h.store)).filter(
      (r) => r.trigger === "schedule" && !r.missed && r.state !== "skipped",
    );
    const recordLag = runs.map((r) => r.claimed_at - r.occurrence);
    return {
      jobs: count,
      daily,
      every_minute: everyMinute,
      one_shots: oneShots,
      seconds,
      change_every_s: changeEvery,
      create_ms: createMs,
      cold_load_ms: coldMs,
      first_load_ms: firstLoadMs,
      refresh_ms: { n: refresh.length, p50: quantile(refresh, 0.5), max: quantile(refresh, 1) },
      engine_lag: { p99_ms: stats.lag_ms.p99, max_ms: stats.lag_ms.max, samples: stats.lag_ms.samples },
      record_lag: {
        n: recordLag.length,
        p50_ms: quantile(recordLag, 0.5),
        p99_ms: quantile(recordLag, 0.99),
        max_ms: quantile(recordLag, 1),
      },
      scheduler_lag: {
        max_ms: quantile(schedulerMax, 1),
        max_after_first_minute_ms: quantile(schedulerMaxLater, 1),
        last_p50_ms: quantile(schedulerLast, 0.5),
      },
      loop_delay: {
        p50_ms: loop.percentile(50) / 1e6,
        p99_ms: loop.percentile(99) / 1e6,
        max_ms: loop.max / 1e6,
      },
      runs: runs.length,
      runs_ok: runs.filter((r) => r.state === "ok").length,
      memory: { before, after_create: afterCreate, after_start: afterStart },
      warnings: h.watch.warnings.slice(0, 5),
    };
  } finally {
    await h.close();
  }
}

/** A full collection before each memory reading, without starting node with --expose-gc. */
function collector(): () => void {
  setFlagsFromString("--expose-gc");
  return runInNewContext("gc") as () => void;
}
