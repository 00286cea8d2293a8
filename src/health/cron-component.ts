// The profile's cron jobs as a health component (`cron`): ok while jobs run as scheduled, degraded
// when one keeps failing, a delivery was given up or waits too long, runs wait for a free slot, or
// (with the scheduler in this process) runs are claimed late or not at all. Each problem names the
// job and the command that shows its runs.
import type { TenaxConfig } from "../config/schema.js";
import type { CronStats } from "../cron/host.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { DEFAULT_PROFILE, type ProfilePaths } from "../profile/paths.js";
import type { CronMetricsInput } from "./cron-metrics.js";
import { type CronSnapshot, type CronSource, readCronSnapshot } from "./cron-snapshot.js";
import { formatDuration } from "./duration.js";
import type { Component } from "./status.js";

/** How old a pending delivery may be before it counts as a backlog. */
export const OUTBOX_BACKLOG_MS = 60 * 60_000;
/** How long a claimed run may wait for a free slot. */
export const QUEUED_TOO_LONG_MS = 10 * 60_000;
/** How late an owed occurrence may be unclaimed while the scheduler runs here. */
export const OVERDUE_MS = 2 * 60_000;
/** The scheduler's p99 lateness (claim after occurrence) that counts as late. */
export const LAG_P99_MS = 1000;

export interface CronComponent extends Component {
  jobs: number;
  enabled: number;
  next_due: { job: string; at: number } | null;
  failing: { job: string; streak: number; since: number | null; last_error: string | null }[];
  /** From the scheduler in this process; null when none runs here. */
  lag_ms: CronStats["lag_ms"] | null;
  running: number | null;
  queued: number | null;
  outbox: { pending: number; given_up: number };
}

export interface CronComponentOptions {
  /** The profile the printed commands name (the default one when left out). */
  profile?: string;
  /** The time zone times are shown in (cron.timezone; the machine's when left out). */
  timezone?: string;
  /** A snapshot already read (the metrics use the same); read from `source` when left out. */
  snapshot?: CronSnapshot;
}

interface Problem {
  detail: string;
  next: string;
}

export async function cronComponent(
  source: CronSource | null,
  now: number,
  stats: CronStats | null,
  options: CronComponentOptions = {},
): Promise<CronComponent> {
  const empty: CronComponent = {
    status: "ok",
    detail: "no cron jobs",
    next: null,
    jobs: 0,
    enabled: 0,
    next_due: null,
    failing: [],
    lag_ms: stats?.lag_ms ?? null,
    running: stats?.running ?? null,
    queued: stats?.queued ?? null,
    outbox: { pending: 0, given_up: 0 },
  };
  let snap: CronSnapshot;
  try {
    snap =
      options.snapshot ?? (source ? await readCronSnapshot(source, now) : { jobs: [], runs: [], outbox: [] });
  } catch {
    // A store that cannot be read is the store component's news.
    return empty;
  }
  const runs = (job: string) => tenaxCommand(options.profile ?? DEFAULT_PROFILE, ["cron", "runs", job]);
  const at = (t: number) => clock(t, now, options.timezone);
  const problems: Problem[] = [];

  const failing = snap.jobs
    .filter((j) => j.streak > 0)
    .map((j) => ({ job: j.job, streak: j.streak, since: j.failing_since, last_error: j.last_error }));
  for (const f of failing)
    problems.push({
      detail: `${f.job} failed ${f.streak} run${f.streak === 1 ? "" : "s"} in a row${f.since === null ? "" : ` since ${at(f.since)}`}${f.last_error ? ` (last error: ${short(f.last_error)})` : ""}`,
      next: runs(f.job),
    });

  const givenUp = snap.outbox.filter((o) => o.state === "given_up");
  const pending = snap.outbox.filter((o) => o.state === "pending");
  for (const o of givenUp)
    problems.push({
      detail: `the ${o.what} of ${o.job} was not delivered to ${o.target}: given up after ${o.attempts} attempt${o.attempts === 1 ? "" : "s"}${o.last_error ? ` (${short(o.last_error)})` : ""}`,
      next: runs(o.job),
    });
  const backlog = pending.filter((o) => o.created_at < now - OUTBOX_BACKLOG_MS);
  const oldest = backlog.reduce<(typeof backlog)[number] | null>(
    (a, o) => (a === null || o.created_at < a.created_at ? o : a),
    null,
  );
  if (oldest)
    problems.push({
      detail: `${backlog.length} deliver${backlog.length === 1 ? "y has" : "ies have"} waited over ${formatDuration(OUTBOX_BACKLOG_MS)} (the oldest, ${oldest.job} to ${oldest.target}, for ${formatDuration(now - oldest.created_at)}${oldest.last_error ? `: ${short(oldest.last_error)}` : ""})`,
      next: runs(oldest.job),
    });

  if (stats !== null && stats.lag_ms.samples > 0 && stats.lag_ms.p99 > LAG_P99_MS)
    problems.push({
      detail: `the scheduler claims due runs late: ${formatMs(stats.lag_ms.p99)} at the 99th percentile over the last hour (worst ${formatMs(stats.lag_ms.max)}, ${stats.lag_ms.samples} runs)`,
      next: "something blocks the gateway's event loop: check CPU load and the log (logs/gateway.log)",
    });

  const waiting = snap.runs
    .filter((r) => (r.state === "queued" || r.state === "missed") && r.claimed_at < now - QUEUED_TOO_LONG_MS)
    .sort((a, b) => a.claimed_at - b.claimed_at);
  const first = waiting[0];
  if (first)
    problems.push({
      detail: `${waiting.length} run${waiting.length === 1 ? "" : "s"} waiting for a free slot for over ${formatDuration(QUEUED_TOO_LONG_MS)} (the oldest, ${first.job}, for ${formatDuration(now - first.claimed_at)}); cron.max_concurrent / gateway.max_turns`,
      next: `raise cron.max_concurrent or gateway.max_turns in config.yaml, or see what holds the slots: ${runs(first.job)}`,
    });

  if (stats !== null)
    for (const j of snap.jobs)
      if (j.owed_at !== null && j.owed_at < now - OVERDUE_MS)
        problems.push({
          detail: `${j.job} was due at ${at(j.owed_at)} (${formatDuration(now - j.owed_at)} ago) and the scheduler running here has not claimed it`,
          next: `the log (logs/gateway.log) says why; ${runs(j.job)}`,
        });

  const enabled = snap.jobs.filter((j) => j.enabled);
  const soonest = enabled.reduce<{ job: string; at: number } | null>(
    (a, j) =>
      j.next_due_at !== null && (a === null || j.next_due_at < a.at) ? { job: j.job, at: j.next_due_at } : a,
    null,
  );
  const component: CronComponent = {
    ...empty,
    jobs: snap.jobs.length,
    enabled: enabled.length,
    next_due: soonest,
    failing,
    outbox: { pending: pending.length, given_up: givenUp.length },
  };
  if (snap.jobs.length === 0 && problems.length === 0) return component;
  if (problems.length > 0)
    return {
      ...component,
      status: "degraded",
      detail: problems.map((p) => p.detail).join("; "),
      next: [...new Set(problems.map((p) => p.next))].join("; "),
    };
  return { ...component, detail: okDetail(snap, soonest, now, at) };
}

/**
 * The component as a gateway serves it: over the snapshot and the engine's numbers it read for this
 * /health (null: the store could not be read, which is the store component's news), saying so when
 * this gateway runs no jobs.
 */
export async function gatewayCronComponent(
  paths: ProfilePaths,
  config: TenaxConfig,
  cron: CronMetricsInput | null,
  now: number,
): Promise<CronComponent> {
  const component = await cronComponent(null, now, cron?.stats ?? null, {
    profile: paths.name,
    ...(config.cron.timezone ? { timezone: config.cron.timezone } : {}),
    snapshot: cron?.snapshot ?? { jobs: [], runs: [], outbox: [] },
  });
  if (config.cron.enabled || component.enabled === 0) return component;
  return {
    ...component,
    detail: `${component.detail}; this gateway runs no jobs (cron.enabled: false): ${tenaxCommand(paths.name, ["cron", "tick"])} runs what is due`,
  };
}

function okDetail(
  snap: CronSnapshot,
  soonest: { job: string; at: number } | null,
  now: number,
  at: (t: number) => string,
): string {
  const paused = snap.jobs.filter((j) => !j.enabled).length;
  const count = `${snap.jobs.length} job${snap.jobs.length === 1 ? "" : "s"}${paused > 0 ? ` (${paused} paused)` : ""}`;
  const next =
    soonest === null
      ? "none due"
      : `next due ${soonest.job} at ${at(soonest.at)} (in ${formatDuration(soonest.at - now)})`;
  const last = snap.jobs.reduce<{ job: string; at: number; state: string } | null>(
    (a, j) =>
      j.last_run_at !== null && j.last_state !== null && (a === null || j.last_run_at > a.at)
        ? { job: j.job, at: j.last_run_at, state: j.last_state }
        : a,
    null,
  );
  const lastText =
    last === null
      ? "no run yet"
      : `last run ${last.state} (${last.job}, ${formatDuration(now - last.at)} ago)`;
  return `${count}, ${next}, ${lastText}`;
}

/** "03:00" today, else "Dec 3 03:00", in the profile's time zone. */
function clock(t: number, now: number, timezone: string | undefined): string {
  const zone = timezone ? { timeZone: timezone } : {};
  const day = (x: number) => new Date(x).toLocaleDateString("en-CA", zone);
  const time = new Date(t).toLocaleTimeString("en-GB", { ...zone, hour: "2-digit", minute: "2-digit" });
  if (day(t) === day(now)) return time;
  const date = new Date(t).toLocaleDateString("en-US", { ...zone, month: "short", day: "numeric" });
  return `${date} ${time}`;
}

function formatMs(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function short(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 160 ? `${line.slice(0, 157)}...` : line;
}
