// Runs claimed cron occurrences as agent turns, at most cron.max_concurrent at once: each in a
// fresh session created in the same transaction that marks the run running (so a process that
// dies after it leaves a run whose session the turn-resume path finds), with the job's timeout,
// and ends each run with its record, streak and deliveries written together. A turn resumed after
// a crash is attached to its run again (watcherFor); runs a dead process claimed but never started
// are taken over; runs a dead process left running and nobody resumed are settled (recover).
import { TenaxError } from "../core/errors.js";
import { localOwners, type Owners } from "../core/owners.js";
import type { RecordPutOp, WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { newRun } from "./claim.js";
import type { CronEvent, CronHost, CronTurnResult } from "./host.js";
import { claimOp, type JobRecord, listRuns, putOp, RUN_KIND, type RunRecord, readJob } from "./records.js";
import { storedOutcome } from "./stored-outcome.js";

export interface RunnerOptions {
  store: StorePort;
  host: CronHost;
  /** cron.max_concurrent (kept within gateway.max_turns by the host's own limit). */
  maxConcurrent: number;
  /** cron.default_timeout, in seconds. */
  defaultTimeoutS: number;
  /** The write creating a new session (Agent.newSessionOp). */
  sessionOp: (title: string) => { id: string; op: WriteOp };
  /** What a run's end writes with it: its job's streak and its deliveries (finish.ts). */
  finishOps?: (
    run: RunRecord,
    job: JobRecord | null,
    now: number,
  ) => Promise<{ ops: RecordPutOp[]; events: CronEvent[] }>;
  /** Told after a run's end was written (the outbox delivers soon). */
  afterFinish?: (run: RunRecord) => void;
  now?: () => number;
  onEvent?: (event: CronEvent) => void;
  onError?: (what: string, error: unknown) => void;
  /** Who holds claims and whether a holder has ended (core/owners.ts); this host's processes by default. */
  owners?: Owners;
  /** Whether a claim's owner may still run it; by default, unless its owner is known to have ended. */
  ownerAlive?: (owner: string) => boolean;
}

/** A turn follower, shaped as the gateway's TurnWatcher. */
export interface CronWatcher {
  onEvent(event: { type: string }): void;
  shutdown(message: string): void;
}

const BUSY_RETRY_MS = 1_000;
/** A resumed run past its timeout still gets this long to finish. */
const RESUME_GRACE_MS = 30_000;

export class CronRunner {
  readonly owner: string;
  private readonly alive: (owner: string) => boolean;
  private readonly pending: { run: RunRecord; job: JobRecord }[] = [];
  /** Runs started here (or resumed here) and not ended, by run key. */
  private readonly active = new Map<string, RunRecord>();
  private startedTotal = 0;
  private readonly perJob: Record<string, { started: number; ended: Record<string, number> }> = {};
  private stopped = false;
  private readonly now: () => number;
  private readonly idleWaiters: (() => void)[] = [];
  /** Sessions of runs resumed here, with their job's folder: how their resumed turn runs. */
  private readonly resumedSessions = new Map<string, string | null>();

  constructor(private readonly options: RunnerOptions) {
    this.now = options.now ?? Date.now;
    const owners = options.owners ?? localOwners();
    this.owner = owners.self;
    // A holder that cannot be told from here is left its claim: only a known end frees it.
    this.alive = options.ownerAlive ?? ((owner) => owners.state(owner) !== "gone");
  }

  enqueue(run: RunRecord, job: JobRecord): void {
    this.pending.push({ run, job });
    this.pump();
  }

  /** Claim a manual run of the job now and queue it. */
  async claimManual(job: JobRecord): Promise<RunRecord> {
    const now = this.now();
    const run = newRun(job, { occurrence: now, trigger: "manual", state: "queued" }, this.owner, now);
    await this.options.store.write([claimOp(RUN_KIND, run.run_key, run, null, now)]);
    this.enqueue(run, job);
    return run;
  }

  counts(): { running: number; queued: number; started_total: number; per_job: RunnerCounts } {
    return {
      running: this.active.size,
      queued: this.pending.length,
      started_total: this.startedTotal,
      per_job: this.perJob,
    };
  }

  /** Resolves once nothing runs or waits here (tick's end). */
  idle(): Promise<void> {
    if (this.active.size === 0 && this.pending.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Resolves once the runs that run here have ended and been recorded, or after `withinMs`. */
  async settled(withinMs: number): Promise<void> {
    this.pending.length = 0;
    this.checkIdle();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.idle(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, withinMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Start nothing more; what waits stays claimed in the store (a later process takes it over). */
  stop(): void {
    this.stopped = true;
    this.pending.length = 0;
    this.checkIdle();
  }

  /**
   * For a turn resumed after a restart: a watcher ending the cron run that owns its session, or
   * undefined when no cron run does.
   */
  async watcherFor(turnId: string, sessionId: string): Promise<CronWatcher | undefined> {
    const run = (await listRuns(this.options.store)).find(
      (r) => r.state === "running" && r.session_id === sessionId,
    );
    if (!run) return undefined;
    const job = await readJob(this.options.store, run.job);
    const resumed: RunRecord = { ...run, turn_id: turnId, owner: this.owner, resumed: run.resumed + 1 };
    this.resumedSessions.set(sessionId, job?.dir ?? null);
    this.active.set(run.run_key, resumed);
    void this.options.store
      .write([putOp(RUN_KIND, run.run_key, resumed, this.now())])
      .catch((error: unknown) => this.options.onError?.(`recording the resumed run ${run.run_key}`, error));
    this.tell(
      run.job,
      run.run_key,
      "cron_run_resumed",
      `${run.job}: run ${run.run_key} resumed after its process stopped`,
    );
    const timeout = this.timeoutMs(job);
    const left = Math.max(RESUME_GRACE_MS, (run.started_at ?? this.now()) + timeout - this.now());
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      this.options.host.interrupt(sessionId, `the job's timeout of ${Math.round(timeout / 1000)} s passed`);
    }, left);
    timer.unref?.();
    let ended = false;
    return {
      onEvent: (event) => {
        if (event.type !== "turn_finished" || ended) return;
        ended = true;
        clearTimeout(timer);
        this.resumedSessions.delete(sessionId);
        // A listener cannot wait: the read of the turn's end and the finish after it run on, a
        // failure told. turn_finished is told once the turn's end is stored.
        void (async () => {
          const outcome = (await storedOutcome(this.options.store, sessionId, turnId, {
            settling: true,
          })) ?? {
            turn_id: turnId,
            status: "failed",
            reply: "",
            error: "the resumed turn ended, but its end is not in the store",
            error_code: "turn_failed",
          };
          await this.finish(resumed, job, timedOut ? asTimeout(outcome, timeout) : outcome);
        })().catch((error: unknown) =>
          this.options.onError?.(`ending the resumed run ${run.run_key}`, error),
        );
      },
      shutdown: () => {},
    };
  }

  /**
   * The interrupted turns of runs a dead process left running: what `tenax cron tick` resumes
   * when no gateway runs to do it.
   */
  async orphanedTurns(): Promise<{ turn_id: string; session_id: string; interrupt_count: number }[]> {
    const alive = this.alive;
    const out: { turn_id: string; session_id: string; interrupt_count: number }[] = [];
    for (const run of await listRuns(this.options.store)) {
      if (run.state !== "running" || run.session_id === null || this.active.has(run.run_key)) continue;
      if (run.owner !== null && run.owner !== this.owner && alive(run.owner)) continue;
      const turns = await this.options.store.getTurns(run.session_id);
      const turn = run.turn_id === null ? turns[0] : turns.find((t) => t.id === run.turn_id);
      if (turn?.status === "interrupted")
        out.push({ turn_id: turn.id, session_id: run.session_id, interrupt_count: turn.interrupt_count });
    }
    return out;
  }

  /**
   * For a turn resumed with watcherFor: in its job's folder, with no one to approve, and under the
   * job's own --timeout rather than agent.turn_deadline.
   */
  turnOptionsFor(sessionId: string): { cwd?: string; unattended: true; deadline: false } | undefined {
    if (!this.resumedSessions.has(sessionId)) return undefined;
    const dir = this.resumedSessions.get(sessionId) ?? null;
    return dir === null
      ? { unattended: true, deadline: false }
      : { cwd: dir, unattended: true, deadline: false };
  }

  /**
   * After startup (resumed turns wired): runs a dead process claimed and never started are taken
   * over and queued here; runs it left running whose turn nobody resumed end with their turn's
   * stored state. Returns how many of each.
   */
  async recover(options: {
    settleInterrupted: boolean;
  }): Promise<{ taken: RunRecord[]; settled: RunRecord[]; waiting: number }> {
    const alive = this.alive;
    const taken: RunRecord[] = [];
    const settled: RunRecord[] = [];
    let waiting = 0;
    for (const run of await listRuns(this.options.store)) {
      if (this.active.has(run.run_key) || this.pending.some((p) => p.run.run_key === run.run_key)) continue;
      if (run.owner === this.owner || (run.owner !== null && alive(run.owner))) continue;
      const job = await readJob(this.options.store, run.job);
      if (run.state === "queued" || run.state === "missed") {
        if (job === null) continue;
        const text = await this.options.store.getRecordText(RUN_KIND, run.run_key);
        const mine: RunRecord = { ...run, owner: this.owner };
        try {
          await this.options.store.write([claimOp(RUN_KIND, run.run_key, mine, text, this.now())]);
        } catch (error) {
          if (TenaxError.isInstance(error) && error.code === "record_conflict") continue;
          throw error;
        }
        taken.push(mine);
        this.enqueue(mine, job);
      } else if (
        run.state === "running" &&
        (run.session_id === null || !this.options.host.isRunning(run.session_id))
      ) {
        const outcome =
          run.session_id === null
            ? null
            : await storedOutcome(this.options.store, run.session_id, run.turn_id, {
                settling: options.settleInterrupted,
              });
        if (outcome === null && run.session_id !== null) {
          // Its turn waits for a gateway to resume it: the run is that gateway's to end.
          waiting++;
          continue;
        }
        settled.push(run);
        await this.finish(
          { ...run, owner: this.owner },
          job,
          outcome ?? {
            turn_id: run.turn_id ?? "",
            status: "interrupted",
            reply: "",
            error: `its process (${run.owner ?? "unknown"}) stopped before the run's turn started`,
            error_code: "interrupted",
          },
          false,
        );
      }
    }
    return { taken, settled, waiting };
  }

  private pump(): void {
    while (!this.stopped && this.active.size < this.options.maxConcurrent && this.pending.length > 0) {
      const next = this.pending.shift();
      if (next) void this.start(next.run, next.job);
    }
    this.checkIdle();
  }

  private async start(run: RunRecord, job: JobRecord, sessionId?: string): Promise<void> {
    const store = this.options.store;
    this.active.set(run.run_key, run);
    let running = run;
    try {
      if (sessionId === undefined) {
        const session = this.options.sessionOp(`cron: ${job.name}`);
        const op: WriteOp =
          session.op.op === "session.create"
            ? {
                ...session.op,
                source: "cron",
                metadata: JSON.stringify({ cron_job: job.name, run_key: run.run_key }),
              }
            : session.op;
        const now = this.now();
        running = { ...run, state: "running", started_at: now, session_id: session.id, owner: this.owner };
        const text = await store.getRecordText(RUN_KIND, run.run_key);
        await store.write([op, claimOp(RUN_KIND, run.run_key, running, text, now)]);
        this.active.set(run.run_key, running);
        this.startedTotal++;
        this.countOf(job.name).started++;
        this.tell(job.name, run.run_key, "cron_run_started", `${job.name}: run ${run.run_key} started`);
      }
      const session = running.session_id ?? "";
      const timeout = this.timeoutMs(job);
      let launched: { result: Promise<CronTurnResult> };
      try {
        launched = await this.options.host.start({
          runKey: run.run_key,
          sessionId: session,
          text: job.prompt,
          model: job.model,
          cwd: job.dir,
          timeoutMs: timeout,
        });
      } catch (error) {
        if (TenaxError.isInstance(error) && error.code === "too_many_turns" && !this.stopped) {
          // The host is full (chats take the rest of gateway.max_turns): try again shortly.
          const retry = setTimeout(() => void this.start(running, job, session), BUSY_RETRY_MS);
          retry.unref?.();
          return;
        }
        throw error;
      }
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        this.options.host.interrupt(session, `the job's timeout of ${Math.round(timeout / 1000)} s passed`);
      }, timeout);
      timer.unref?.();
      const result = await launched.result.finally(() => clearTimeout(timer));
      await this.finish(running, job, timedOut ? asTimeout(result, timeout) : result);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (TenaxError.isInstance(error) && error.code === "record_conflict") {
        // Taken over by another process meanwhile: it is that process's run now.
        this.active.delete(run.run_key);
        this.pump();
        return;
      }
      await this.finish(running, job, {
        turn_id: running.turn_id ?? "",
        status: "failed",
        reply: "",
        error: `the run could not start: ${message}`,
        error_code: TenaxError.isInstance(error) ? error.code : "turn_failed",
      }).catch((e: unknown) => this.options.onError?.(`ending the run ${run.run_key}`, e));
    }
  }

  private async finish(
    run: RunRecord,
    job: JobRecord | null,
    result: CronTurnResult,
    pump = true,
  ): Promise<void> {
    const now = this.now();
    const state =
      result.status === "completed" ? "ok" : result.status === "interrupted" ? "interrupted" : "failed";
    const reply = result.reply;
    const final: RunRecord = {
      ...run,
      state,
      ended_at: now,
      turn_id: result.turn_id === "" ? run.turn_id : result.turn_id,
      reply,
      error: result.error,
      error_code: result.error_code,
      silent: state === "ok" && reply.trim() === "[SILENT]",
    };
    try {
      const extra = (await this.options.finishOps?.(final, job, now)) ?? { ops: [], events: [] };
      await this.options.store.write([putOp(RUN_KIND, run.run_key, final, now), ...extra.ops]);
      const counts = this.countOf(run.job).ended;
      counts[state] = (counts[state] ?? 0) + 1;
      const how = state === "ok" ? "ended ok" : `ended ${state}: ${result.error ?? "no reason given"}`;
      this.tell(run.job, run.run_key, "cron_run_finished", `${run.job}: run ${run.run_key} ${how}`);
      for (const event of extra.events) this.options.onEvent?.(event);
      this.options.afterFinish?.(final);
    } catch (error) {
      this.options.onError?.(`recording the end of run ${run.run_key}`, error);
    } finally {
      this.active.delete(run.run_key);
      if (pump) this.pump();
      else this.checkIdle();
    }
  }

  private timeoutMs(job: JobRecord | null): number {
    return (job?.timeout_s ?? this.options.defaultTimeoutS) * 1000;
  }

  private countOf(job: string): { started: number; ended: Record<string, number> } {
    this.perJob[job] ??= { started: 0, ended: {} };
    return this.perJob[job];
  }

  private checkIdle(): void {
    if (this.active.size > 0 || this.pending.length > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private tell(job: string, runKey: string, type: CronEvent["type"], message: string): void {
    this.options.onEvent?.({ type, layer: "cron", job, run_key: runKey, message });
  }
}

type RunnerCounts = Record<string, { started: number; ended: Record<string, number> }>;

/** A turn the job's timeout interrupted failed, with code `timeout`. */
function asTimeout(result: CronTurnResult, timeoutMs: number): CronTurnResult {
  if (result.status === "completed") return result;
  return {
    ...result,
    status: "failed",
    error: `the job's timeout of ${Math.round(timeoutMs / 1000)} s passed before the turn ended`,
    error_code: "timeout",
  };
}
