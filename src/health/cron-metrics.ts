// The cron jobs in /metrics: per job (label `job`) whether it is enabled, when it is next due, its
// failure streak, when it last ran and its runs by state; and the scheduler's lateness and the
// outbox. Runs are counted by the scheduler in this process when it runs here, else from the store.
import type { CronStats } from "../cron/host.js";
import type { CronSnapshot } from "./cron-snapshot.js";

export interface CronMetricsInput {
  snapshot: CronSnapshot;
  stats: CronStats | null;
}

type Emit = (
  name: string,
  type: "gauge" | "counter",
  help: string,
  rows: [Record<string, string>, number][],
) => void;

export function cronMetrics(metric: Emit, input: CronMetricsInput): void {
  const { snapshot, stats } = input;
  const jobs = snapshot.jobs;
  metric(
    "tenax_cron_job_enabled",
    "gauge",
    "1 for each cron job that runs on its schedule, 0 for a paused one.",
    jobs.map((j) => [{ job: j.job }, j.enabled ? 1 : 0]),
  );
  metric(
    "tenax_cron_job_next_due_timestamp_seconds",
    "gauge",
    "When each enabled cron job is next due (Unix time).",
    jobs.flatMap((j) => (j.next_due_at === null ? [] : [[{ job: j.job }, j.next_due_at / 1000]])),
  );
  metric(
    "tenax_cron_job_failure_streak",
    "gauge",
    "Failed runs in a row of each cron job since its last ok one.",
    jobs.map((j) => [{ job: j.job }, j.streak]),
  );
  metric(
    "tenax_cron_job_last_run_timestamp_seconds",
    "gauge",
    "When each cron job's last run (not skipped) ended, or started while it runs (Unix time).",
    jobs.flatMap((j) => (j.last_run_at === null ? [] : [[{ job: j.job }, j.last_run_at / 1000]])),
  );
  const rows: [Record<string, string>, number][] = [];
  if (stats !== null) {
    for (const [job, counts] of Object.entries(stats.per_job))
      for (const [state, n] of Object.entries(counts.ended)) rows.push([{ job, state }, n]);
  } else {
    for (const j of jobs)
      for (const [state, n] of Object.entries(j.ended)) rows.push([{ job: j.job, state }, n]);
  }
  metric(
    "tenax_cron_job_runs_total",
    "counter",
    stats !== null
      ? "Cron runs ended by this process, by job and state."
      : "Cron runs the store holds (within cron.run_retention_days), by job and state.",
    rows,
  );
  if (stats !== null && stats.lag_ms.samples > 0)
    metric(
      "tenax_cron_scheduler_lag_seconds",
      "gauge",
      "How late the cron scheduler claimed due runs, 99th percentile over the last hour.",
      [[{}, stats.lag_ms.p99 / 1000]],
    );
  const pending = snapshot.outbox.filter((o) => o.state === "pending").length;
  const givenUp = snapshot.outbox.filter((o) => o.state === "given_up").length;
  metric("tenax_cron_outbox_pending", "gauge", "Cron deliveries and notices still to send.", [[{}, pending]]);
  metric("tenax_cron_outbox_given_up", "gauge", "Cron deliveries and notices given up after their retries.", [
    [{}, givenUp],
  ]);
}
