// What a cron run's end writes with its record, in the same transaction: the job's failure streak
// (notices.ts) and the outbox entries for its result and any notice (delivery.ts), so that a run
// recorded as ended always has its deliveries queued, and a crash never queues them without it.
import type { StorePort } from "../store/port.js";
import { outboxOps } from "./delivery.js";
import type { CronEvent } from "./host.js";
import { nextHealth, noticeOf } from "./notices.js";
import { HEALTH_KIND, putOp, readHealth } from "./records.js";
import type { RunnerOptions } from "./runner.js";

export function finishOps(store: StorePort): NonNullable<RunnerOptions["finishOps"]> {
  return async (run, job, now) => {
    // A removed job keeps no streak; its run is still delivered where it was to go.
    if (job === null) return { ops: outboxOps(run, null, null, now), events: [] };
    const step = nextHealth(await readHealth(store, run.job), run.job, run, now);
    const notice = noticeOf(step, run.job, run);
    const events: CronEvent[] =
      notice === null
        ? []
        : [
            {
              type: notice.kind === "failing" ? "cron_failing" : "cron_recovered",
              layer: "cron",
              job: run.job,
              run_key: run.run_key,
              message: notice.text,
            },
          ];
    return {
      ops: [putOp(HEALTH_KIND, run.job, step.health, now), ...outboxOps(run, job, notice, now)],
      events,
    };
  };
}
