// The cron suite's aims and its lines for the terminal (bench/cron.ts measures).
import type { CronBenchResult } from "./cron.js";
import { type Aim, int, ms, table } from "./report.js";

export const BURST_AIM_MS = 60_000;
export const LAG_AIM_MS = 100;

export function judgeCronAims(r: CronBenchResult): Aim[] {
  const aims: Aim[] = r.bursts.map((b) => {
    const clean = b.jobs_with_one_ok_run === b.jobs && b.run_records === b.jobs;
    const within = b.peak_in_flight <= b.max_turns;
    return {
      aim: `${int(b.jobs)} jobs due in one minute claimed and started within it (max_concurrent ${b.max_concurrent})`,
      met: b.last_launch_ms < BURST_AIM_MS && b.last_claim_ms < BURST_AIM_MS && clean && within,
      detail:
        `last start +${(b.last_launch_ms / 1000).toFixed(1)} s (x${(b.last_launch_ms / BURST_AIM_MS).toFixed(2)} of 60 s), ` +
        `last claim +${ms(b.last_claim_ms)} ms; peak ${b.peak_in_flight} in flight of max_turns ${b.max_turns}; ` +
        `${int(b.jobs_with_one_ok_run)} jobs with one ok run; ${int(b.chat_requests)} model calls`,
    };
  });
  const l = r.lag;
  const worst = Math.max(l.engine_lag.max_ms, l.record_lag.max_ms);
  aims.push({
    aim: `scheduler lag < ${LAG_AIM_MS} ms with ${int(l.jobs)} jobs`,
    met: worst < LAG_AIM_MS && l.engine_lag.samples > 0,
    detail:
      `max ${ms(worst)} ms (x${(worst / LAG_AIM_MS).toFixed(2)} of ${LAG_AIM_MS} ms) over ${l.engine_lag.samples} due claims, ` +
      `p99 ${ms(l.engine_lag.p99_ms)} ms; Scheduler.lag() max ${ms(l.scheduler_lag.max_after_first_minute_ms)} ms ` +
      `after the first minute (${ms(l.scheduler_lag.max_ms)} ms with the start's first load of every job)`,
  });
  return aims;
}

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

export function cronLines(r: CronBenchResult): string[] {
  const b = r.bursts;
  const l = r.lag;
  const m = l.memory;
  return [
    "\ncron burst: jobs due at one instant, run through Gateway.launch (ms from the due instant)",
    table(
      [
        "form",
        "max_turns",
        "max_conc",
        "first claim",
        "last claim",
        "last start",
        "last end",
        "peak in flight",
        "refused",
        "one ok run",
        "model calls",
      ],
      b.map((x) => [
        `${x.form} "${x.schedule}"`,
        String(x.max_turns),
        String(x.max_concurrent),
        ms(x.last_claim_planned_ms),
        ms(x.last_claim_ms),
        ms(x.last_launch_ms),
        ms(x.last_end_ms),
        String(x.peak_in_flight),
        String(x.refused),
        `${int(x.jobs_with_one_ok_run)}/${int(x.jobs)}`,
        int(x.chat_requests),
      ]),
    ),
    `\ncron lag: ${int(l.jobs)} jobs (${int(l.daily)} daily far from now, ${l.every_minute} every 1m, ${l.one_shots} one-shots) for ${l.seconds} s, ${l.change_every_s === 0 ? "no job changed" : `a job changed every ${l.change_every_s} s`}`,
    table(
      ["figure", "n", "p50 ms", "p99 ms", "max ms"],
      [
        [
          "engine.stats().lag_ms (due claims)",
          String(l.engine_lag.samples),
          "",
          ms(l.engine_lag.p99_ms),
          ms(l.engine_lag.max_ms),
        ],
        [
          "run records: claimed_at - occurrence",
          String(l.record_lag.n),
          ms(l.record_lag.p50_ms),
          ms(l.record_lag.p99_ms),
          ms(l.record_lag.max_ms),
        ],
        [
          "Scheduler.lag() (read each second)",
          "",
          ms(l.scheduler_lag.last_p50_ms),
          "",
          ms(l.scheduler_lag.max_ms),
        ],
        ["  the same, from 65 s after the start", "", "", "", ms(l.scheduler_lag.max_after_first_minute_ms)],
        ["event loop delay", "", ms(l.loop_delay.p50_ms), ms(l.loop_delay.p99_ms), ms(l.loop_delay.max_ms)],
        [
          "refresh after one job changed",
          String(l.refresh_ms.n),
          ms(l.refresh_ms.p50),
          "",
          ms(l.refresh_ms.max),
        ],
        ["startOn (returns; the load goes on in slices)", "1", ms(l.cold_load_ms), "", ""],
        ["first load of all jobs, until the first tick", "1", ms(l.first_load_ms), "", ""],
      ],
    ),
    `  runs ${l.runs_ok}/${l.runs} ok; jobs written in ${(l.create_ms / 1000).toFixed(1)} s; ` +
      `rss ${mb(m.before.rss)} -> ${mb(m.after_create.rss)} (jobs written) -> ${mb(m.after_start.rss)} MiB (engine loaded); ` +
      `heap used ${mb(m.before.heapUsed)} -> ${mb(m.after_create.heapUsed)} -> ${mb(m.after_start.heapUsed)} MiB`,
    ...[...b.flatMap((x) => x.warnings), ...l.warnings].map((w) => `  warning: ${w}`),
  ];
}
