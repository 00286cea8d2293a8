// What one claim of a job's owed occurrences writes: the run records (due, catch-up, skipped) and
// the job's slot advanced past them, all in one transaction that only one process can win: the
// slot is written with record.claim against the slot it was planned from, and every run record
// against its absence. Pure: the engine reads, calls this, and writes what it returns.
import { newId } from "../core/ids.js";
import type { WriteOp } from "../store/ops.js";
import type { StoreReads } from "../store/port.js";
import { type MissedPlan, planMissed } from "./missed.js";
import {
  claimOp,
  type JobRecord,
  RUN_KIND,
  type RunRecord,
  readSlot,
  runKey,
  SLOT_KIND,
  type SlotRecord,
} from "./records.js";

export interface ClaimPlan {
  plan: MissedPlan;
  /** The run to start (due or catch-up), or null. */
  run: RunRecord | null;
  skipped: RunRecord[];
  /** The writes; empty when nothing is owed yet. */
  ops: WriteOp[];
  /** The slot after the claim. */
  slot: number;
}

/** Occurrences after this are owed to a job that never ran: after its creation (a one-shot's own instant). */
export function ownedSince(job: JobRecord): number {
  return job.schedule.kind === "once" ? Math.min(job.created_at, job.schedule.at - 1) : job.created_at;
}

/** Where the owed occurrences start: after the slot, when it counts for this very job. */
export function owedSince(job: JobRecord, slot: SlotRecord | null): number {
  return slot !== null && slot.job_created_at === job.created_at ? slot.slot : ownedSince(job);
}

/** The same, reading the slot from the store. */
export async function owedSinceOf(
  store: Pick<StoreReads, "getRecord" | "listRecords">,
  job: JobRecord,
): Promise<number> {
  return owedSince(job, await readSlot(store, job.name));
}

export function newRun(
  job: JobRecord,
  fields: Pick<RunRecord, "occurrence" | "trigger" | "state"> & Partial<RunRecord>,
  owner: string | null,
  now: number,
): RunRecord {
  const manual = fields.trigger === "manual" ? newId("", now) : undefined;
  return {
    run_key: runKey(job.name, fields.occurrence, manual),
    run_id: newId("cronrun_", now),
    job: job.name,
    missed: false,
    reason: null,
    count: 1,
    until: null,
    owner,
    claimed_at: now,
    started_at: null,
    ended_at: null,
    session_id: null,
    turn_id: null,
    reply: null,
    error: null,
    error_code: null,
    silent: false,
    deliver: job.deliver,
    resumed: 0,
    ...fields,
  };
}

/**
 * The claim of what `job` owes at `now`, given its slot as stored (`slotText`, the JSON the
 * store holds, which the claim is checked against). `watchedSince`: when the planning scheduler
 * began watching (null for a one-off tick), as the missed-run rule takes it.
 */
export function planClaim(
  job: JobRecord,
  slot: SlotRecord | null,
  slotText: string | null,
  owner: string,
  now: number,
  watchedSince: number | null = null,
): ClaimPlan {
  const since = owedSince(job, slot);
  const plan = planMissed(job.schedule, { since, now, catchUp: job.catch_up, watchedSince });
  const skipped = plan.skipped.map((s) =>
    newRun(
      job,
      {
        occurrence: s.at,
        trigger: "schedule",
        state: "skipped",
        reason: s.reason,
        count: s.count,
        until: s.until ?? null,
        ended_at: now,
      },
      owner,
      now,
    ),
  );
  let run: RunRecord | null = null;
  if (plan.due !== null)
    run = newRun(job, { occurrence: plan.due, trigger: "schedule", state: "queued" }, owner, now);
  else if (plan.catchUp !== null)
    run = newRun(
      job,
      { occurrence: plan.catchUp, trigger: "catch_up", state: "missed", missed: true },
      owner,
      now,
    );
  const newest = Math.max(
    since,
    plan.due ?? Number.NEGATIVE_INFINITY,
    plan.catchUp ?? Number.NEGATIVE_INFINITY,
    ...plan.skipped.map((s) => s.until ?? s.at),
  );
  if (run === null && skipped.length === 0) return { plan, run, skipped, ops: [], slot: since };
  const slotValue: SlotRecord = {
    name: job.name,
    slot: newest,
    job_created_at: job.created_at,
    updated_at: now,
  };
  const records = run === null ? skipped : [...skipped, run];
  const ops: WriteOp[] = [
    claimOp(SLOT_KIND, job.name, slotValue, slotText, now),
    ...records.map((r) => claimOp(RUN_KIND, r.run_key, r, null, now)),
  ];
  return { plan, run, skipped, ops, slot: newest };
}
