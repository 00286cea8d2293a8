// Cron jobs and runs of a test profile, written and read in the test process beside the CLI's and
// the gateway's own processes (the store takes several writers): jobs made through CronJobs, and
// records written by hand as the engine would leave them (a job whose runs keep failing).
import { CronJobs, type JobInput } from "../../src/cron/jobs.js";
import {
  HEALTH_KIND,
  JOB_KIND,
  listRuns,
  putOp,
  RUN_KIND,
  type RunRecord,
  runKey,
  SLOT_KIND,
} from "../../src/cron/records.js";
import { parseSchedule } from "../../src/cron/schedule.js";
import type { ProfilePaths } from "../../src/profile/paths.js";
import { openReader, openStore, releaseStore } from "../../src/store/registry.js";

/** A job `name` (every hour) whose last 3 runs failed with `error`; the slot is claimed up to now. */
export async function writeFailingJob(paths: ProfilePaths, name: string, error: string): Promise<void> {
  const now = Date.now();
  const created = now - 24 * 3_600_000;
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const occurrence = now - 60_000;
  try {
    await store.write([
      putOp(
        JOB_KIND,
        name,
        {
          name,
          schedule: parseSchedule("every 1h", { timezone: "UTC", now: created }),
          prompt: "report",
          model: null,
          dir: null,
          timeout_s: null,
          deliver: "local",
          enabled: true,
          catch_up: true,
          created_at: created,
          updated_at: created,
        },
        now,
      ),
      putOp(SLOT_KIND, name, { name, slot: now, job_created_at: created, updated_at: now }, now),
      putOp(
        HEALTH_KIND,
        name,
        {
          name,
          streak: 3,
          failing_since: now - 3 * 3_600_000,
          notified: true,
          last_status: "failed",
          last_run_key: runKey(name, occurrence),
          last_ended_at: occurrence + 1000,
          last_error: error,
          updated_at: now,
        },
        now,
      ),
      putOp(
        RUN_KIND,
        runKey(name, occurrence),
        {
          run_key: runKey(name, occurrence),
          run_id: "run_1",
          job: name,
          occurrence,
          trigger: "schedule",
          missed: false,
          state: "failed",
          reason: null,
          count: 1,
          until: null,
          owner: null,
          claimed_at: occurrence,
          started_at: occurrence,
          ended_at: occurrence + 1000,
          session_id: null,
          turn_id: null,
          reply: null,
          error,
          error_code: "rate_limit",
          silent: false,
          deliver: "local",
          resumed: 0,
        },
        now,
      ),
    ]);
  } finally {
    await releaseStore(store);
  }
}

export const PERIOD = 60_000;

/**
 * An `every 1m` job whose first occurrence is `inMs` from now (the schedule's anchor is its
 * creation time, set back by a period less `inMs`); returns that occurrence.
 */
export async function addJob(
  paths: ProfilePaths,
  name: string,
  prompt: string,
  inMs: number,
  more: Partial<JobInput> = {},
): Promise<number> {
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  try {
    const created = Date.now() - PERIOD + inMs;
    await new CronJobs(store, { timezone: "UTC", now: () => created }).create(name, {
      schedule: "every 1m",
      prompt,
      ...more,
    });
    return created + PERIOD;
  } finally {
    await releaseStore(store);
  }
}

export async function runsOf(paths: ProfilePaths, job: string): Promise<RunRecord[]> {
  const reader = openReader(paths);
  try {
    return await listRuns(reader, job);
  } finally {
    reader.close();
  }
}
