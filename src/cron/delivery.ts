// The durable outbox of cron results and notices. The engine writes a run's entries in the same
// transaction as the run's end (outboxOps); CronOutbox sends what is due, at least once to the
// target and never again once a success is recorded: each attempt is leased in the store first
// (so processes sharing the store never send one entry at once; the lease names its process, and
// a lease whose process has ended is over), and the delivered mark is the first thing written
// after a success.

import type { Scheduler, Job as SchedulerJob } from "../agent/scheduler.js";
import { stepBackoff } from "../core/backoff.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import { Passes } from "../core/passes.js";
import { ownerOf } from "../core/process-owner.js";
import type { ChatRef } from "../platforms/adapter.js";
import { outboxEntryOp } from "../platforms/outbox-records.js";
import type { RecordPutOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { dueAt, isRecordConflict, LEASE_MARGIN_MS } from "../store/record-ops.js";
import { type SendOutcome, sendEntry } from "./delivery-send.js";
import type { CronEvent } from "./host.js";
import type { Notice } from "./notices.js";
import {
  claimOp,
  type JobRecord,
  OUTBOX_KIND,
  type OutboxRecord,
  outboxRecord,
  putOp,
  type RunRecord,
} from "./records.js";

export interface OutboxOptions {
  store: StorePort;
  /** The profile's cron/output folder: local deliveries go under it, one folder per job. */
  outputDir: string;
  now?: () => number;
  random?: () => number;
  fetchImpl?: typeof fetch;
  onEvent?: (event: CronEvent) => void;
  /** One webhook attempt's limit (ms). */
  timeoutMs?: number;
  /** Attempts before an entry is given up. */
  maxAttempts?: number;
  /** The wait after the Nth failed attempt (ms). */
  backoff?: (attempt: number) => number;
  /** maintainOn prunes delivered and given-up entries older than this (ms). */
  retainMs?: number;
}

export interface DeliveryReport {
  delivered: number;
  failed: number;
  given_up: number;
}

export interface OutboxBacklog {
  pending: number;
  given_up: number;
  /** When the oldest pending entry was written, or null. */
  oldest_pending_at: number | null;
  /** The newest error of an entry not delivered, or null. */
  last_error: string | null;
}

const SECOND = 1_000;
const BACKOFF = {
  stepsMs: [5, 15, 60, 300, 900, 3_600, 7_200, 14_400].map((s) => s * SECOND),
  capMs: 6 * 3_600 * SECOND,
  spread: 0.2,
};
/** Entries sent at once (a slow webhook does not hold the others back). */
const PARALLEL = 8;
const PRUNE_EVERY_MS = 3_600 * SECOND;

/** 5 s, 15 s, 1 min, 5 min, 15 min, 1 h, 2 h, 4 h, then 6 h, each within ±20 %. */
export function defaultBackoff(attempt: number, random: () => number = Math.random): number {
  return stepBackoff(BACKOFF, attempt, random);
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/**
 * The outbox entries a run's end writes with it: its result (unless it was skipped or its reply
 * was [SILENT]) and the notice, if the streak gave one. They go to the job's current target
 * (the run's, if the job was removed), each as an entry of its own.
 */
export function outboxOps(
  run: RunRecord,
  job: JobRecord | null,
  notice: Notice | null,
  now: number,
): RecordPutOp[] {
  const target = job?.deliver ?? run.deliver;
  const entry = (what: OutboxRecord["what"], body: unknown): RecordPutOp => {
    const key = `${run.run_key}/${what}`;
    const record: OutboxRecord = {
      key,
      run_key: run.run_key,
      job: run.job,
      what,
      target,
      body: JSON.stringify(body),
      state: "pending",
      attempts: 0,
      next_at: now,
      last_error: null,
      created_at: now,
      delivered_at: null,
    };
    return putOp(OUTBOX_KIND, key, record, now);
  };
  const ops: RecordPutOp[] = [];
  const ended = run.state === "ok" || run.state === "failed" || run.state === "interrupted";
  const chat = chatTarget(target);
  if (chat !== null) {
    // A chat target goes through the chat platforms' outbox, in this same transaction.
    if (ended && !run.silent) ops.push(chatEntry(chat, run, "result", runText(run), now));
    if (notice !== null) ops.push(chatEntry(chat, run, notice.kind, notice.text, now));
    return ops;
  }
  if (ended && !run.silent)
    ops.push(
      entry("result", {
        type: "cron.run",
        job: run.job,
        run_key: run.run_key,
        run_id: run.run_id,
        occurrence: iso(run.occurrence),
        state: run.state,
        missed: run.missed,
        reply: run.reply,
        error: run.error,
        started_at: iso(run.started_at),
        ended_at: iso(run.ended_at),
        session_id: run.session_id,
      }),
    );
  if (notice !== null)
    ops.push(
      entry(notice.kind, {
        type: "cron.notice",
        kind: notice.kind,
        job: run.job,
        run_key: run.run_key,
        text: notice.text,
        streak: notice.streak,
      }),
    );
  return ops;
}

/** A `telegram:CHAT_ID` target as the chat it names; null for local and webhook targets. */
export function chatTarget(target: string): ChatRef | null {
  const match = /^telegram:(-?\d+)$/.exec(target);
  return match?.[1] === undefined ? null : { platform: "telegram", chat_id: match[1], thread_id: null };
}

function chatEntry(chat: ChatRef, run: RunRecord, what: string, text: string, now: number): RecordPutOp {
  return outboxEntryOp(
    {
      message: { type: "send", chat, text, format: "markdown" },
      id: `cron_${run.run_key}/${what}`.replace(/[^A-Za-z0-9_./-]/g, "_"),
      origin: `cron:${run.run_key}`,
    },
    now,
  ).op;
}

/** A run's result as a chat message: the job, then the reply, or what went wrong. */
function runText(run: RunRecord): string {
  const head = `**${run.job}**${run.missed ? " (a catch-up run for a missed time)" : ""}`;
  if (run.state === "ok") return `${head}\n\n${run.reply}`;
  return `${head} ${run.state === "interrupted" ? "was interrupted" : "failed"}: ${run.error ?? "no reason recorded"}${run.reply ? `\n\n${run.reply}` : ""}`;
}

export class CronOutbox {
  private readonly store: StorePort;
  private readonly now: () => number;
  private readonly backoff: (attempt: number) => number;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  /** Entries being sent from this process: an overlapping pass leaves them alone. */
  private readonly held = new Set<string>();
  /** Written on each lease: a restart after a kill takes over the dead process's leases at once. */
  private readonly owner = ownerOf();
  /** Entries delivered whose mark could not be written yet: the next pass writes it, never resends. */
  private readonly unmarked = new Map<string, OutboxRecord>();
  private readonly jobs: SchedulerJob[] = [];
  private stopped = false;

  private readonly passes = new Passes(
    () => this.deliverDue(),
    () => this.stopped,
  );

  constructor(private readonly options: OutboxOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    const random = options.random ?? Math.random;
    this.backoff = options.backoff ?? ((attempt) => defaultBackoff(attempt, random));
    this.timeoutMs = options.timeoutMs ?? 10 * SECOND;
    this.maxAttempts = options.maxAttempts ?? 12;
  }

  /** Send every pending entry that is due. Never throws: what fails is counted and retried later. */
  async deliverDue(): Promise<DeliveryReport> {
    const report: DeliveryReport = { delivered: 0, failed: 0, given_up: 0 };
    try {
      await this.writeUnmarked();
      const now = this.now();
      const due = (await this.entries()).filter(
        (e) =>
          e.state === "pending" && dueAt(e, now) <= now && !this.held.has(e.key) && !this.unmarked.has(e.key),
      );
      for (const e of due) this.held.add(e.key);
      const queue = [...due];
      const worker = async () => {
        for (let e = queue.shift(); e !== undefined; e = queue.shift()) {
          try {
            await this.deliverOne(e, report);
          } catch (error) {
            report.failed++;
            this.tell(
              e,
              "cron_delivery_failed",
              `${e.job}: delivering ${e.key} failed: ${errorMessage(error)}`,
            );
          } finally {
            this.held.delete(e.key);
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(PARALLEL, due.length) }, worker));
    } catch (error) {
      report.failed++;
      this.options.onEvent?.({
        type: "cron_delivery_failed",
        layer: "cron",
        job: "",
        run_key: null,
        message: `the cron outbox could not be read: ${errorMessage(error)}`,
      });
    }
    return report;
  }

  /** What waits and what was given up, for health. */
  async backlog(): Promise<OutboxBacklog> {
    let pending = 0;
    let givenUp = 0;
    let oldest: number | null = null;
    let lastError: { at: number; text: string } | null = null;
    for (const row of await this.store.listRecords(OUTBOX_KIND)) {
      const parsed = outboxRecord.safeParse(row.value);
      if (!parsed.success || parsed.data.state === "delivered" || this.unmarked.has(parsed.data.key))
        continue;
      const e = parsed.data;
      if (e.state === "pending") {
        pending++;
        if (oldest === null || e.created_at < oldest) oldest = e.created_at;
      } else givenUp++;
      if (e.last_error !== null && (lastError === null || row.updated_at >= lastError.at))
        lastError = { at: row.updated_at, text: e.last_error };
    }
    return { pending, given_up: givenUp, oldest_pending_at: oldest, last_error: lastError?.text ?? null };
  }

  /** Deliver every `everyMs` on the process's scheduler, and prune old entries hourly. */
  maintainOn(scheduler: Scheduler, everyMs = 5 * SECOND): void {
    this.jobs.push(scheduler.every("cron: deliveries", everyMs, () => this.deliverDue()));
    const retain = this.options.retainMs ?? 30 * 24 * 3_600 * SECOND;
    this.jobs.push(scheduler.every("cron: prune outbox", PRUNE_EVERY_MS, () => this.prune(retain)));
  }

  /**
   * Deliver now (new entries were written); a kick during a pass asks for one more after it.
   * Resolves when the passes end; never rejects (callers may leave it unawaited).
   */
  kick(): Promise<void> {
    return this.passes.kick();
  }

  /** Stop the scheduled passes (a pass under way finishes). */
  stop(): void {
    this.stopped = true;
    for (const job of this.jobs.splice(0)) job.cancel();
  }

  /** Delete delivered and given-up entries last written more than `olderThanMs` ago; how many. */
  async prune(olderThanMs: number): Promise<number> {
    const now = this.now();
    const ops = (await this.store.listRecords(OUTBOX_KIND)).flatMap((row) => {
      const parsed = outboxRecord.safeParse(row.value);
      if (!parsed.success || parsed.data.state === "pending" || row.updated_at > now - olderThanMs) return [];
      return [putOp(OUTBOX_KIND, row.key, null, Math.max(now, row.updated_at))];
    });
    for (let i = 0; i < ops.length; i += 200) await this.store.write(ops.slice(i, i + 200));
    return ops.length;
  }

  private async entries(): Promise<OutboxRecord[]> {
    return (await this.store.listRecords(OUTBOX_KIND)).flatMap((row) => {
      const parsed = outboxRecord.safeParse(row.value);
      return parsed.success ? [parsed.data] : [];
    });
  }

  private async deliverOne(entry: OutboxRecord, report: DeliveryReport): Promise<void> {
    const text = await this.store.getRecordText(OUTBOX_KIND, entry.key);
    if (text === null) return;
    // The lease is built from the entry as it is now, not as the pass listed it: another process
    // may have delivered or leased it while this pass sent the entries before it.
    const fresh = outboxRecord.safeParse(JSON.parse(text));
    const start = this.now();
    if (!fresh.success || fresh.data.state !== "pending" || dueAt(fresh.data, start) > start) return;
    // The lease: this process's attempt, written only if nobody changed the entry since it was read.
    const leased: OutboxRecord = {
      ...fresh.data,
      next_at: start + this.timeoutMs + LEASE_MARGIN_MS,
      leased_by: this.owner,
    };
    try {
      await this.store.write([claimOp(OUTBOX_KIND, entry.key, leased, text, start)]);
    } catch (error) {
      if (isRecordConflict(error)) return;
      throw error;
    }
    const leasedText = await this.store.getRecordText(OUTBOX_KIND, entry.key);
    const outcome = await sendEntry(leased, {
      outputDir: this.options.outputDir,
      fetchImpl: this.options.fetchImpl ?? fetch,
      timeoutMs: this.timeoutMs,
      now: start,
    });
    await this.settle(leased, leasedText, start, outcome, report);
  }

  private async settle(
    leased: OutboxRecord,
    leasedText: string | null,
    start: number,
    outcome: SendOutcome,
    report: DeliveryReport,
  ): Promise<void> {
    // Never older than the lease: a put with an older stamp would be ignored.
    const now = Math.max(this.now(), start);
    if (outcome.kind === "delivered") {
      const done: OutboxRecord = {
        ...leased,
        leased_by: undefined,
        state: "delivered",
        attempts: leased.attempts + 1,
        delivered_at: now,
      };
      // Persist first: a success is never sent again, whoever holds the lease now.
      try {
        await this.store.write([putOp(OUTBOX_KIND, done.key, done, now)]);
      } catch (error) {
        this.unmarked.set(done.key, done);
        this.tell(
          done,
          "cron_delivery_failed",
          `${done.job}: ${done.key} was delivered but not yet marked (${errorMessage(error)}); it is not sent again`,
        );
      }
      report.delivered++;
      this.tell(done, "cron_delivered", `${done.job}: ${describe(done)} delivered to ${outcome.where}`);
      return;
    }
    const attempts = leased.attempts + 1;
    const giveUp = outcome.kind === "give_up" || attempts >= this.maxAttempts;
    const next: OutboxRecord = giveUp
      ? {
          ...leased,
          leased_by: undefined,
          state: "given_up",
          attempts,
          last_error: outcome.error,
          next_at: now,
        }
      : {
          ...leased,
          leased_by: undefined,
          attempts,
          last_error: outcome.error,
          next_at:
            now +
            (outcome.kind === "retry" && outcome.retryAfterMs !== null
              ? outcome.retryAfterMs
              : this.backoff(attempts)),
        };
    try {
      // Only over our own lease: if another process took the entry over meanwhile, its word stands.
      if (leasedText === null)
        throw new TenaxError("record_conflict", `${leased.key} vanished during its attempt`);
      await this.store.write([claimOp(OUTBOX_KIND, next.key, next, leasedText, now)]);
    } catch (error) {
      if (!isRecordConflict(error)) throw error;
      return;
    }
    if (giveUp) {
      report.given_up++;
      const why =
        outcome.kind === "give_up"
          ? outcome.error
          : `${outcome.error}; ${attempts} attempts, the last one allowed`;
      this.tell(next, "cron_delivery_given_up", `${next.job}: ${describe(next)} was given up: ${why}`);
      return;
    }
    report.failed++;
    const wait = Math.round((next.next_at - now) / SECOND);
    this.tell(
      next,
      "cron_delivery_failed",
      `${next.job}: ${describe(next)} not delivered (attempt ${attempts}): ${outcome.error}; next try in ${wait} s`,
    );
  }

  private async writeUnmarked(): Promise<void> {
    for (const [key, done] of this.unmarked) {
      await this.store.write([putOp(OUTBOX_KIND, key, done, Math.max(this.now(), done.delivered_at ?? 0))]);
      this.unmarked.delete(key);
    }
  }

  private tell(entry: OutboxRecord, type: CronEvent["type"], message: string): void {
    this.options.onEvent?.({ type, layer: "cron", job: entry.job, run_key: entry.run_key, message });
  }
}

function describe(entry: OutboxRecord): string {
  return entry.what === "result"
    ? `the result of ${entry.run_key}`
    : `the "${entry.what}" notice of ${entry.run_key}`;
}
