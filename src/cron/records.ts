// How cron keeps its data in the store's records table, one kind per concern so that writers
// never overwrite each other's fields:
//   cron_job     key NAME          the definition (the CLI and /api/jobs write it)
//   cron_slot    key NAME          the newest occurrence accounted for (the scheduler advances it)
//   cron_health  key NAME          the failure streak and what was notified (a run's end writes it)
//   cron_run     key NAME/OCC      one per occurrence run, skipped or summarized; its key is the claim
// A run's deliveries are entries of the outbox (src/outbox, channel `cron`); `cron_outbox` is where
// an earlier Tenax kept them, read once to move them there (legacyOutboxRecord).
// Records carry no session id (deleting a run's session keeps the job's history); what is read
// back is checked, and a record that fails is treated as absent.
import { z } from "zod";
import type { StoreReads } from "../store/port.js";

export const JOB_KIND = "cron_job";
export const SLOT_KIND = "cron_slot";
export const HEALTH_KIND = "cron_health";
export const RUN_KIND = "cron_run";
/** Where an earlier Tenax kept cron deliveries; the outbox moves them into its own kind. */
export const OUTBOX_KIND = "cron_outbox";

const schedule = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("cron"), spec: z.string(), expression: z.string(), timezone: z.string() }),
  z.object({
    kind: z.literal("every"),
    spec: z.string(),
    period_ms: z.number(),
    anchor: z.number(),
    timezone: z.string(),
  }),
  z.object({
    kind: z.literal("once"),
    spec: z.string(),
    at: z.number(),
    timezone: z.string(),
    past: z.boolean(),
  }),
]);

// Not strict: a record written by a newer Tenax with more fields still reads.
export const jobRecord = z.object({
  name: z.string(),
  schedule,
  prompt: z.string(),
  /** A pinned `PROVIDER/NAME`, or null for the profile's primary chain. */
  model: z.string().nullable(),
  /** The folder the run's tools start in; null: the gateway's (or tick's) working folder. */
  dir: z.string().nullable(),
  /** Seconds; null: cron.default_timeout. */
  timeout_s: z.number().int().positive().nullable(),
  /** `local`, `webhook:URL` or `telegram:CHAT_ID`. */
  deliver: z.string(),
  enabled: z.boolean(),
  /** False: every missed occurrence is recorded as skipped, none caught up. */
  catch_up: z.boolean(),
  created_at: z.number(),
  updated_at: z.number(),
});
export type JobRecord = z.infer<typeof jobRecord>;

export const slotRecord = z.object({
  name: z.string(),
  /** The newest occurrence claimed (run or recorded as skipped); later ones are owed. */
  slot: z.number(),
  /** Which job definition it counts for: a job removed and added again starts over. */
  job_created_at: z.number(),
  updated_at: z.number(),
});
export type SlotRecord = z.infer<typeof slotRecord>;

export const healthRecord = z.object({
  name: z.string(),
  /** Failed runs in a row since the last ok one. */
  streak: z.number().int().min(0),
  /** When the streak began (its first failed run ended), or null. */
  failing_since: z.number().nullable(),
  /** Whether "started failing" was notified for the current streak. */
  notified: z.boolean(),
  last_status: z.string().nullable(),
  last_run_key: z.string().nullable(),
  last_ended_at: z.number().nullable(),
  last_error: z.string().nullable(),
  updated_at: z.number(),
});
export type HealthRecord = z.infer<typeof healthRecord>;

/**
 * queued: claimed, waiting for a free run slot; missed: a catch-up claimed, waiting (it keeps
 * `missed: true` once it runs); running; ok; failed; skipped (never run, with the reason);
 * interrupted (its process stopped and it was not resumed).
 */
export const runState = z.enum(["queued", "missed", "running", "ok", "failed", "skipped", "interrupted"]);
export type RunState = z.infer<typeof runState>;
export const FINAL_STATES: readonly RunState[] = ["ok", "failed", "skipped", "interrupted"];

export const runRecord = z.object({
  run_key: z.string(),
  run_id: z.string(),
  job: z.string(),
  /** The occurrence (ms); for a manual run, when it was asked for. */
  occurrence: z.number(),
  trigger: z.enum(["schedule", "catch_up", "manual"]),
  /** A catch-up run after downtime, standing for a missed occurrence. */
  missed: z.boolean(),
  state: runState,
  /** For skipped: why; for a summary, how many occurrences it stands for and the last one. */
  reason: z.string().nullable(),
  count: z.number().int().min(1),
  until: z.number().nullable(),
  /** Who claimed it: "pid:N@START" of the process (a dead owner's queued run is taken over). */
  owner: z.string().nullable(),
  claimed_at: z.number(),
  started_at: z.number().nullable(),
  ended_at: z.number().nullable(),
  session_id: z.string().nullable(),
  turn_id: z.string().nullable(),
  reply: z.string().nullable(),
  error: z.string().nullable(),
  /** The error's code (the classified reason, `timeout`, `interrupted`...). */
  error_code: z.string().nullable(),
  /** The reply was exactly [SILENT]: recorded, not delivered. */
  silent: z.boolean(),
  /** The job's delivery target when it was claimed. */
  deliver: z.string(),
  /** How many times its process stopped under it and it was resumed. */
  resumed: z.number().int().min(0),
});
export type RunRecord = z.infer<typeof runRecord>;

export const legacyOutboxRecord = z.object({
  key: z.string(),
  run_key: z.string(),
  job: z.string(),
  /** What is sent: the run's result, or a notice that the job started failing or recovered. */
  what: z.enum(["result", "failing", "recovered"]),
  target: z.string(),
  /** The JSON body sent (for local: written to the file). */
  body: z.string(),
  state: z.enum(["pending", "delivered", "given_up"]),
  attempts: z.number().int().min(0),
  /** When it may be tried next; while an attempt is under way, when its lease ends. */
  next_at: z.number(),
  /** The process holding the lease (ownerOf), while an attempt is under way. */
  leased_by: z.string().optional(),
  last_error: z.string().nullable(),
  created_at: z.number(),
  delivered_at: z.number().nullable(),
});

type Source = Pick<StoreReads, "listRecords" | "getRecord">;
/** What reads a record as its stored text too (a claim's `expect`). */
export type RecordSource = Pick<StoreReads, "listRecords" | "getRecord" | "getRecordText">;

function parsed<T>(schema: z.ZodType<T>, value: unknown): T | null {
  const result = schema.safeParse(value);
  return result.success ? result.data : null;
}

async function all<T>(store: Source, kind: string, schema: z.ZodType<T>): Promise<T[]> {
  return (await store.listRecords(kind)).flatMap((r) => {
    const value = parsed(schema, r.value);
    return value === null ? [] : [value];
  });
}

export const readJob = async (store: Source, name: string) =>
  parsed(jobRecord, await store.getRecord(JOB_KIND, name));
export const listJobs = async (store: Source) =>
  (await all(store, JOB_KIND, jobRecord)).sort((a, b) => a.name.localeCompare(b.name));
export const readSlot = async (store: Source, name: string) =>
  parsed(slotRecord, await store.getRecord(SLOT_KIND, name));
export const readHealth = async (store: Source, name: string) =>
  parsed(healthRecord, await store.getRecord(HEALTH_KIND, name));
export const readRun = async (store: Source, key: string) =>
  parsed(runRecord, await store.getRecord(RUN_KIND, key));

/** A job's runs (newest occurrence first), or every job's; keys sort by occurrence within a job. */
export async function listRuns(store: Source, job?: string): Promise<RunRecord[]> {
  const runs = await all(store, RUN_KIND, runRecord);
  return (job === undefined ? runs : runs.filter((r) => r.job === job)).sort(
    (a, b) => b.occurrence - a.occurrence || b.claimed_at - a.claimed_at,
  );
}

/** The claim key of an occurrence: the job, then the time zero-padded so keys sort by time. */
export function runKey(job: string, occurrence: number, manualId?: string): string {
  const at = String(Math.max(0, Math.floor(occurrence))).padStart(15, "0");
  return manualId === undefined ? `${job}/${at}` : `${job}/${at}-manual-${manualId}`;
}

// The record writes are shared with the chat platforms (src/store/record-ops.ts).
export { claimOp, putOp } from "../store/record-ops.js";
