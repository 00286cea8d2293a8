// The cron scheduler of one process (the gateway, or one `tenax cron tick`): it keeps each job's
// next due time in memory, wakes on the process's one Scheduler exactly when the soonest is due,
// and claims what is owed in the store before anything runs (claim.ts), so that however many
// processes tick, each occurrence is claimed once. Claimed runs are started by the runner
// (runner.ts) within cron.max_concurrent. Job definitions changed by another process are picked up
// by a cheap look at the records' stamp every few seconds, and only the changed ones are read.
import type { Scheduler, Job as SchedulerJob } from "../agent/scheduler.js";
import { TenaxError } from "../core/errors.js";
import type { StorePort } from "../store/port.js";
import { owedSinceOf, planClaim } from "./claim.js";
import type { CronEvent, CronStats } from "./host.js";
import { span } from "./missed.js";
import { nextAfter } from "./next.js";
import { JOB_KIND, type JobRecord, type RunRecord, readJob, readSlot, SLOT_KIND } from "./records.js";
import { CronRunner, type RunnerOptions } from "./runner.js";

export interface EngineOptions extends RunnerOptions {
  store: StorePort;
  now?: () => number;
  onEvent?: (event: CronEvent) => void;
  /** How often definitions changed elsewhere are looked for (ms). */
  refreshMs?: number;
  /** A pause between planning a claim and writing it (race tests: TENAX_CRON_CLAIM_DELAY_MS). */
  claimDelayMs?: number;
}

export interface TickReport {
  claimed: RunRecord[];
  skipped: RunRecord[];
  /** Claims another process won first. */
  conflicts: number;
}

interface Entry {
  job: JobRecord;
  /** The job record's version in the store (recordVersions): a reload reads only what changed. */
  version: string;
  next: number | null;
  /**
   * When this scheduler, watching, read this version of the job: it cannot wake for an occurrence
   * before it knew of it (a job added elsewhere is seen within refreshMs), so that is not lag either.
   */
  knownAt: number;
}

const LAG_WINDOW_MS = 3_600_000;
/** Claims written at once: 1,000 jobs due in one minute commit in a few group commits. */
const CLAIM_BATCH = 200;
/** Jobs read between two yields of the first load: 10,000 jobs never block the loop for long. */
const LOAD_SLICE = 250;

export class CronEngine {
  readonly runner: CronRunner;
  readonly store: StorePort;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private stamp = "";
  /** The refresh under way (refreshes run one after another). */
  private refreshing: Promise<boolean> = Promise.resolve(false);
  private wake: SchedulerJob | null = null;
  private wakeAt = Number.POSITIVE_INFINITY;
  private scheduler: Scheduler | null = null;
  private ticking: Promise<TickReport> | null = null;
  private again = false;
  private readonly lags: { at: number; ms: number }[] = [];
  /**
   * When this engine began watching (startOn): occurrences before it fell due while no scheduler
   * ran, and are missed, not late. Null for a one-off tick.
   */
  private watchingSince: number | null = null;
  private stopped = false;
  /** The first load on startOn, read in slices; refresh waits for it. */
  private loading: Promise<void> | null = null;

  constructor(private readonly options: EngineOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    this.runner = new CronRunner(options);
  }

  /** Run on the scheduler: wake at the soonest due time, and look for changed jobs every few seconds. */
  startOn(scheduler: Scheduler): void {
    this.scheduler = scheduler;
    this.watchingSince = this.now();
    scheduler.every("cron: changed jobs", this.options.refreshMs ?? 5_000, async () => {
      if (await this.refresh()) this.arm();
    });
    this.loading = this.load().finally(() => {
      this.loading = null;
    });
    void this.tick();
  }

  /** Stop waking and starting runs; running ones go on (the host drains them). */
  stop(): void {
    this.stopped = true;
    this.wake?.cancel();
    this.wake = null;
    this.runner.stop();
  }

  /** A job was changed in this process (/api/jobs): look again now. */
  async changed(): Promise<void> {
    if (await this.refresh(true)) this.arm();
    if (!this.stopped && this.scheduler !== null) void this.tick();
  }

  /**
   * Claim and start what is due now. Concurrent calls share one pass (and one more after it, if
   * asked for meanwhile), so a wake-up and a change never claim twice in this process.
   */
  tick(): Promise<TickReport> {
    if (this.ticking !== null) {
      this.again = true;
      return this.ticking;
    }
    const pass = this.pass().finally(() => {
      this.ticking = null;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.tick();
      }
      this.arm();
    });
    this.ticking = pass;
    return pass;
  }

  /** Start a run of the job now, whatever its schedule (tenax cron run, POST /api/jobs/NAME/run). */
  async runNow(name: string): Promise<RunRecord> {
    const job = await readJob(this.store, name);
    if (!job)
      throw new TenaxError("job_not_found", `there is no cron job named "${name}"`, {
        hint: "tenax cron list shows the jobs",
      });
    return this.runner.claimManual(job);
  }

  stats(): CronStats {
    const since = this.now() - LAG_WINDOW_MS;
    while (this.lags.length > 0 && (this.lags[0]?.at ?? 0) < since) this.lags.shift();
    const sorted = this.lags.map((l) => l.ms).sort((a, b) => a - b);
    let next: number | null = null;
    for (const e of this.entries.values())
      if (e.job.enabled && e.next !== null && (next === null || e.next < next)) next = e.next;
    return {
      lag_ms: {
        last: this.lags.at(-1)?.ms ?? 0,
        max: sorted.at(-1) ?? 0,
        p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0,
        samples: sorted.length,
      },
      ...this.runner.counts(),
      next_due_at: next,
      jobs: this.entries.size,
    };
  }

  private async pass(): Promise<TickReport> {
    const report: TickReport = { claimed: [], skipped: [], conflicts: 0 };
    if (this.stopped) return report;
    if (this.loading !== null) await this.loading;
    await this.refresh();
    const now = this.now();
    const due = [...this.entries.values()].filter((e) => e.job.enabled && e.next !== null && e.next <= now);
    for (let i = 0; i < due.length; i += CLAIM_BATCH)
      await Promise.all(due.slice(i, i + CLAIM_BATCH).map((entry) => this.claim(entry, now, report)));
    return report;
  }

  private async claim(entry: Entry, now: number, report: TickReport): Promise<void> {
    const { job } = entry;
    const slotText = await this.store.getRecordText(SLOT_KIND, job.name);
    const slot = await readSlot(this.store, job.name);
    const claim = planClaim(job, slot, slotText, this.runner.owner, now, this.watchingSince);
    entry.next = claim.plan.next;
    if (claim.ops.length === 0) return;
    // Fault injection for the race tests: a pause between reading the slot and writing the claim,
    // so that processes ticking together all plan from the same slot before any of them writes.
    const pause = this.options.claimDelayMs ?? 0;
    if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    try {
      await this.store.write(claim.ops);
    } catch (error) {
      if (TenaxError.isInstance(error) && error.code === "record_conflict") {
        // Another process claimed first: what it claimed is not ours; look again from its slot.
        report.conflicts++;
        entry.next = nextAfter(job.schedule, await owedSinceOf(this.store, job));
        return;
      }
      throw error;
    }
    report.skipped.push(...claim.skipped);
    for (const skipped of claim.skipped) {
      const what = skipped.count > 1 ? `${skipped.count} runs` : "a run";
      this.tell(
        job.name,
        skipped.run_key,
        "cron_skipped",
        `${job.name}: ${what} skipped (${skipped.reason})`,
      );
    }
    const run = claim.run;
    if (run === null) return;
    report.claimed.push(run);
    if (!run.missed) {
      // The scheduler's lag: how late an on-time run was claimed after the scheduler could have
      // woken for it (a catch-up is late by design, and an occurrence from before the scheduler ran
      // is one: downtime is missed runs, not lag).
      const claimedAt = this.now();
      const from = Math.max(run.occurrence, entry.knownAt);
      this.lags.push({ at: claimedAt, ms: Math.max(0, claimedAt - from) });
      if (this.lags.length > 100_000) this.lags.shift();
    }
    if (run.missed)
      this.tell(
        job.name,
        run.run_key,
        "cron_missed",
        `${job.name}: the run due ${span(now - run.occurrence)} ago was missed; one catch-up run starts now`,
      );
    this.runner.enqueue(run, job);
  }

  /**
   * Reload the jobs whose definitions changed; true when any did. A look at the kind's stamp says
   * whether anything did; then only the records whose version moved are read and parsed (a change
   * of one job among 10,000 reads one). Slots are not looked at: every claim writes one, and a
   * slot another process moved needs no reload, as the claim reads the slot afresh.
   */
  private refresh(force = false): Promise<boolean> {
    // One at a time, as when reads were synchronous: a tick's look never sees another half done.
    const next = this.refreshing.then(
      () => this.refreshNow(force),
      () => this.refreshNow(force),
    );
    this.refreshing = next.catch(() => false);
    return next;
  }

  private async refreshNow(force: boolean): Promise<boolean> {
    if (this.loading !== null) return false;
    const stamp = await this.store.recordStamp(JOB_KIND);
    if (!force && stamp === this.stamp) return false;
    this.stamp = stamp;
    const versions = await this.store.recordVersions(JOB_KIND);
    let changed = this.drop(versions);
    for (const [name, version] of versions) if (await this.reload(name, version)) changed = true;
    return changed;
  }

  /** The first load: every job, read in slices with a yield between them. */
  private async load(): Promise<void> {
    this.stamp = await this.store.recordStamp(JOB_KIND);
    const versions = [...(await this.store.recordVersions(JOB_KIND))];
    for (let i = 0; i < versions.length && !this.stopped; i += LOAD_SLICE) {
      for (const [name, version] of versions.slice(i, i + LOAD_SLICE)) await this.reload(name, version);
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Read one job again when its version moved; true when its entry changed. */
  private async reload(name: string, version: string): Promise<boolean> {
    if (this.entries.get(name)?.version === version) return false;
    const job = await readJob(this.store, name);
    if (job === null) return this.entries.delete(name);
    this.entries.set(name, {
      job,
      version,
      next: nextAfter(job.schedule, await owedSinceOf(this.store, job)),
      // A one-off tick has no watch to be late for: its lateness counts from the occurrence.
      knownAt: this.watchingSince === null ? Number.NEGATIVE_INFINITY : this.now(),
    });
    return true;
  }

  /** Forget the jobs no longer stored; true when there were any. */
  private drop(versions: Map<string, string>): boolean {
    let dropped = false;
    for (const name of [...this.entries.keys()])
      if (!versions.has(name)) dropped = this.entries.delete(name) || dropped;
    return dropped;
  }

  /** Wake at the soonest due time (at once when one is past). */
  private arm(): void {
    if (this.stopped || this.scheduler === null) return;
    let soonest = Number.POSITIVE_INFINITY;
    for (const e of this.entries.values())
      if (e.job.enabled && e.next !== null && e.next < soonest) soonest = e.next;
    if (soonest === this.wakeAt && this.wake !== null) return;
    this.wake?.cancel();
    this.wake = null;
    this.wakeAt = soonest;
    if (!Number.isFinite(soonest)) return;
    this.wake = this.scheduler.at("cron: next due", soonest, () => {
      this.wake = null;
      this.wakeAt = Number.POSITIVE_INFINITY;
      return this.tick();
    });
  }

  private tell(job: string, runKey: string | null, type: CronEvent["type"], message: string): void {
    this.options.onEvent?.({ type, layer: "cron", job, run_key: runKey, message });
  }
}
