// The profile's cron jobs as health sees them, read from the store in one pass: every job, slot,
// streak, run and outbox entry listed once and indexed by job, so /health and /metrics cost a
// fixed number of reads however many jobs there are.
import { owedSince } from "../cron/claim.js";
import { type CronDelivery, listOutbox } from "../cron/delivery.js";
import { nextAfter } from "../cron/next.js";
import {
  FINAL_STATES,
  HEALTH_KIND,
  type HealthRecord,
  healthRecord,
  listJobs,
  listRuns,
  type RunRecord,
  type RunState,
  SLOT_KIND,
  type SlotRecord,
  slotRecord,
} from "../cron/records.js";
import type { StoreReads } from "../store/port.js";

/** What health reads: the store's records (a writer or a read-only reader). */
export type CronSource = Pick<StoreReads, "listRecords" | "getRecord">;

export interface CronJobRow {
  job: string;
  enabled: boolean;
  /** The next occurrence from now on, or null (paused, or a one-shot that is past). */
  next_due_at: number | null;
  /** The oldest occurrence not yet claimed (before now when the scheduler is late), or null. */
  owed_at: number | null;
  streak: number;
  failing_since: number | null;
  last_error: string | null;
  /** The newest run that was not skipped: its state and when it ended (or started, or was claimed). */
  last_state: RunState | null;
  last_run_at: number | null;
  /** Stored runs that ended, by state (ok, failed, skipped, interrupted). */
  ended: Record<string, number>;
}

export interface CronSnapshot {
  jobs: CronJobRow[];
  runs: RunRecord[];
  outbox: CronDelivery[];
}

async function byName<T extends { name: string }>(
  source: CronSource,
  kind: string,
  parse: (v: unknown) => T | null,
): Promise<Map<string, T>> {
  const out = new Map<string, T>();
  for (const r of await source.listRecords(kind)) {
    const value = parse(r.value);
    if (value !== null) out.set(value.name, value);
  }
  return out;
}

const asHealth = (v: unknown): HealthRecord | null => {
  const r = healthRecord.safeParse(v);
  return r.success ? r.data : null;
};
const asSlot = (v: unknown): SlotRecord | null => {
  const r = slotRecord.safeParse(v);
  return r.success ? r.data : null;
};

export async function readCronSnapshot(source: CronSource, now: number): Promise<CronSnapshot> {
  const jobs = await listJobs(source);
  const health = await byName(source, HEALTH_KIND, asHealth);
  const slots = await byName(source, SLOT_KIND, asSlot);
  const runs = await listRuns(source);
  const outbox = await listOutbox(source);
  const runsOf = new Map<string, RunRecord[]>();
  for (const run of runs) {
    const list = runsOf.get(run.job);
    if (list) list.push(run);
    else runsOf.set(run.job, [run]);
  }
  const rows = jobs.map((job): CronJobRow => {
    const slot = slots.get(job.name);
    const since = owedSince(job, slot ?? null);
    const mine = runsOf.get(job.name) ?? [];
    // Newest first (listRuns), so the first that was not skipped is the last real run.
    const last = mine.find((r) => r.state !== "skipped") ?? null;
    const ended: Record<string, number> = {};
    for (const r of mine) if (FINAL_STATES.includes(r.state)) ended[r.state] = (ended[r.state] ?? 0) + 1;
    const h = health.get(job.name);
    return {
      job: job.name,
      enabled: job.enabled,
      next_due_at: job.enabled ? nextAfter(job.schedule, Math.max(since, now - 1)) : null,
      owed_at: job.enabled ? nextAfter(job.schedule, since) : null,
      streak: h?.streak ?? 0,
      failing_since: h?.failing_since ?? null,
      last_error: h?.last_error ?? last?.error ?? null,
      last_state: last?.state ?? null,
      last_run_at: last === null ? null : (last.ended_at ?? last.started_at ?? last.claimed_at),
      ended,
    };
  });
  return { jobs: rows, runs, outbox };
}
