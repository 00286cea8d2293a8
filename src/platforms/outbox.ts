// The durable outbox of outbound chat messages. An entry is written to the store before anything
// is sent (with what produced it, when the caller commits outboxEntryOp with its own writes);
// PlatformOutbox sends what is due through the platform's adapter:
// - each attempt is leased in the store first (a record.claim over the text just read), so
//   processes sharing the store never send one entry at the same time; the lease names its
//   process, and a lease whose process has ended is over (a restart after kill -9 resends at once);
// - after a success the delivered mark, with the platform's message id, is the first write, so a
//   restart never sends it again;
// - one chat's entries go strictly in order: while the earliest pending one waits for a retry,
//   nothing later to that chat is sent;
// - a retryable failure waits the platform's retry_after exactly when it gave one, else stepped
//   backoff with jitter; past the attempts or the age allowed, or on a failure retrying will not
//   fix, the entry is given up with an event.

import type { PlatformEvent } from "../agent/events.js";
import type { Scheduler, Job as SchedulerJob } from "../agent/scheduler.js";
import { stepBackoff } from "../core/backoff.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import { Passes } from "../core/passes.js";
import { ownerOf } from "../core/process-owner.js";
import type { StorePort } from "../store/port.js";
import { claimOp, dueAt, isRecordConflict, LEASE_MARGIN_MS, putOp } from "../store/record-ops.js";
import type { PlatformAdapter } from "./adapter.js";
import { type PlatformBacklog, readBacklog } from "./outbox-backlog.js";
import {
  type EnqueueInput,
  listOutboxEntries,
  OUTBOX_KIND,
  type OutboxEntry,
  outboxEntryOp,
  parseEntry,
  pruneOps,
  readOutboxEntry,
} from "./outbox-records.js";
import { type AttemptOutcome, attempt } from "./outbox-send.js";

export interface PlatformOutboxOptions {
  store: StorePort;
  /** The adapters this process sends through; entries of other platforms are left pending. */
  adapters: readonly PlatformAdapter[];
  now?: () => number;
  random?: () => number;
  onEvent?: (event: PlatformEvent) => void;
  /** One attempt's limit (ms); default 10 s. */
  timeoutMs?: number;
  /** Attempts before an entry is given up; default 40. */
  maxAttempts?: number;
  /** An entry failing this long after it was enqueued is given up (ms); default 24 h. */
  maxAgeMs?: number;
  /** The wait after the Nth failed attempt (ms), when the platform named none. */
  backoff?: (attempt: number) => number;
  /** maintainOn prunes delivered and given-up entries older than this (ms); default 24 h. */
  retainMs?: number;
  /** Chats sent to at once; default 8. */
  parallel?: number;
}

export interface DeliveryReport {
  delivered: number;
  failed: number;
  given_up: number;
}

export interface OutboxStats {
  /** Since this process started, per platform. */
  delivered_total: Record<string, number>;
  failed_total: Record<string, number>;
  given_up_total: Record<string, number>;
}

const SECOND = 1_000;
const HOUR = 3_600 * SECOND;
/** 1 s, 2 s, 5 s, 10 s, 30 s, 1 min, 2 min, then 5 min, each within ±20 %. */
const BACKOFF = { stepsMs: [1, 2, 5, 10, 30, 60, 120].map((s) => s * SECOND), capMs: 300 * SECOND };
const PRUNE_EVERY_MS = HOUR;
const IDLE_MAX_MS = 30 * SECOND;

export function defaultPlatformBackoff(attempt: number, random: () => number = Math.random): number {
  return stepBackoff(BACKOFF, attempt, random);
}

type Step = "sent" | "given_up" | "blocked";

export class PlatformOutbox {
  private readonly store: StorePort;
  private readonly now: () => number;
  private readonly backoff: (attempt: number) => number;
  private readonly timeoutMs: number;
  private readonly maxAttempts: number;
  private readonly maxAgeMs: number;
  private readonly adapters = new Map<string, PlatformAdapter>();
  /** Chats being sent to from this process: an overlapping pass leaves them alone. */
  private readonly held = new Set<string>();
  /** Entries delivered whose mark could not be written yet: the next pass writes it, never resends. */
  private readonly unmarked = new Map<string, OutboxEntry>();
  private readonly counts: OutboxStats = { delivered_total: {}, failed_total: {}, given_up_total: {} };
  private readonly jobs: SchedulerJob[] = [];
  private readonly stopping = new AbortController();
  /** Written on each lease: a restart after a kill takes over the dead process's leases at once. */
  private readonly owner = ownerOf();
  /** After a pass that found nothing to do: the kind's stamp then, and when something is due. */
  private idle: { stamp: string; until: number } | null = null;

  private readonly passes = new Passes(
    () => this.deliverDue(),
    () => this.stopping.signal.aborted,
  );

  constructor(private readonly options: PlatformOutboxOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    const random = options.random ?? Math.random;
    this.backoff = options.backoff ?? ((n) => defaultPlatformBackoff(n, random));
    this.timeoutMs = options.timeoutMs ?? 10 * SECOND;
    this.maxAttempts = options.maxAttempts ?? 40;
    this.maxAgeMs = options.maxAgeMs ?? 24 * HOUR;
    for (const adapter of options.adapters) this.adapters.set(adapter.name, adapter);
  }

  /**
   * Write one entry on its own and start sending it; `created` is false when an entry with this
   * id was already there (a repeated enqueue), which is then left as it is.
   */
  async enqueue(input: EnqueueInput): Promise<{ key: string; created: boolean }> {
    const now = this.now();
    const { entry } = outboxEntryOp(input, now);
    try {
      await this.store.write([claimOp(OUTBOX_KIND, entry.key, entry, null, now)]);
    } catch (error) {
      if (isRecordConflict(error)) return { key: entry.key, created: false };
      throw error;
    }
    void this.kick();
    return { key: entry.key, created: true };
  }

  /** Send what is due, each chat in order. Never throws: what fails is counted and retried later. */
  async deliverDue(): Promise<DeliveryReport> {
    const report: DeliveryReport = { delivered: 0, failed: 0, given_up: 0 };
    try {
      await this.writeUnmarked();
      // An idle outbox does not read every entry each second: nothing written since its last
      // look and nothing due yet means nothing to send (a full look at least every IDLE_MAX_MS,
      // in case a write by a process with a slower clock left the stamp as it was).
      const now = this.now();
      const stamp = await this.store.recordStamp(OUTBOX_KIND);
      if (this.idle !== null && this.idle.stamp === stamp && now < this.idle.until) return report;
      this.idle = null;
      const lanes = new Map<string, OutboxEntry[]>();
      let soonest = now + IDLE_MAX_MS;
      for (const e of await listOutboxEntries(this.store)) {
        if (e.state !== "pending" || this.unmarked.has(e.key) || !this.adapters.has(e.platform)) continue;
        soonest = Math.min(soonest, dueAt(e, now));
        const lane = lanes.get(e.chat_key) ?? [];
        lane.push(e);
        lanes.set(e.chat_key, lane);
      }
      if (soonest > now && this.held.size === 0) {
        this.idle = { stamp, until: soonest };
        return report;
      }
      const queue = [...lanes].filter(([chat]) => !this.held.has(chat));
      for (const [chat] of queue) this.held.add(chat);
      const worker = async () => {
        for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
          const [chat, entries] = next;
          try {
            await this.sendLane(
              entries.sort((a, b) => (a.order < b.order ? -1 : 1)),
              report,
            );
          } finally {
            this.held.delete(chat);
          }
        }
      };
      const parallel = Math.max(1, this.options.parallel ?? 8);
      await Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker));
    } catch (error) {
      report.failed++;
      this.tell(
        null,
        "platform_delivery_failed",
        `the platform outbox could not be read: ${errorMessage(error)}`,
      );
    }
    return report;
  }

  /** Per platform: what waits and what was given up, from the store (every process's entries). */
  async backlog(): Promise<Record<string, PlatformBacklog>> {
    return await readBacklog(
      this.store,
      [...this.adapters.keys()],
      new Set(this.unmarked.keys()),
      this.now(),
    );
  }

  /** This process's counts of delivered, failed and given-up attempts, per platform. */
  stats(): OutboxStats {
    return structuredClone(this.counts);
  }

  /** Deliver every `everyMs` on the process's scheduler, and prune old entries hourly. */
  maintainOn(scheduler: Scheduler, everyMs = SECOND): void {
    this.jobs.push(scheduler.every("platforms: outbox", everyMs, () => this.deliverDue()));
    const retain = this.options.retainMs ?? 24 * HOUR;
    this.jobs.push(scheduler.every("platforms: prune outbox", PRUNE_EVERY_MS, () => this.prune(retain)));
  }

  /**
   * Deliver now (an entry was written); a kick during a pass asks for one more after it.
   * Resolves when the passes end; never rejects (callers may leave it unawaited).
   */
  kick(): Promise<void> {
    return this.passes.kick();
  }

  /**
   * The platform answers again (its adapter reconnected): what waits out a backoff step is due
   * now, not up to minutes later. An entry an attempt holds (its lease), or one waiting out a
   * wait the platform asked for (a 429's retry_after), is left alone, and each is
   * moved only over the text just read, so a process that changed it meanwhile keeps its word.
   * Resolves with how many entries were woken, once the pass that sends them has ended.
   */
  async wake(platform: string): Promise<number> {
    const now = this.now();
    let woken = 0;
    for (const row of await this.store.listRecords(OUTBOX_KIND)) {
      const entry = parseEntry(row.value);
      if (entry === null || entry.platform !== platform || entry.state !== "pending") continue;
      // Not a lease, nor a wait the platform asked for: a 429's retry_after is kept to the letter.
      if (entry.next_at <= now || entry.leased === true || entry.asked_wait === true) continue;
      const text = await this.store.getRecordText(OUTBOX_KIND, entry.key);
      if (text === null) continue;
      try {
        await this.store.write([claimOp(OUTBOX_KIND, entry.key, { ...entry, next_at: now }, text, now)]);
        woken++;
      } catch (error) {
        if (!isRecordConflict(error)) throw error;
      }
    }
    await this.kick();
    return woken;
  }

  /** Stop: no new passes, and an attempt under way is aborted (it stays pending, to be sent later). */
  stop(): void {
    this.stopping.abort();
    for (const job of this.jobs.splice(0)) job.cancel();
  }

  /** Delete delivered and given-up entries last written more than `olderThanMs` ago; how many. */
  async prune(olderThanMs: number): Promise<number> {
    const ops = await pruneOps(this.store, olderThanMs, this.now());
    for (let i = 0; i < ops.length; i += 200) await this.store.write(ops.slice(i, i + 200));
    return ops.length;
  }

  /** One chat's pending entries, oldest first: each is sent only once the one before it is done. */
  private async sendLane(entries: OutboxEntry[], report: DeliveryReport): Promise<void> {
    for (const entry of entries) {
      if (this.stopping.signal.aborted) return;
      let step: Step;
      try {
        step = await this.deliverOne(entry, report);
      } catch (error) {
        report.failed++;
        this.tell(entry, "platform_delivery_failed", `${entry.key}: sending failed: ${errorMessage(error)}`);
        return;
      }
      if (step === "blocked") return;
    }
  }

  private async deliverOne(entry: OutboxEntry, report: DeliveryReport): Promise<Step> {
    const adapter = this.adapters.get(entry.platform);
    const text = await this.store.getRecordText(OUTBOX_KIND, entry.key);
    // Read again: another process may have sent or leased it since the pass listed it.
    const fresh = text === null ? null : parseEntry(JSON.parse(text));
    const start = this.now();
    if (adapter === undefined || fresh === null) return "blocked";
    if (fresh.state !== "pending") return "sent";
    if (dueAt(fresh, start) > start) return "blocked";
    let messageId: string | null = null;
    if (fresh.op.type === "edit") {
      const resolved = await this.editTarget(fresh);
      if (resolved === "wait") return "blocked";
      if (resolved === "gone") {
        await this.settle(
          fresh,
          text,
          start,
          {
            kind: "failed",
            op: fresh.op,
            error: {
              message: `the message to edit (${fresh.op.of_key}) was never delivered`,
              retryable: false,
              retry_after_ms: null,
              plain_text: false,
            },
          },
          report,
        );
        return "given_up";
      }
      messageId = resolved;
    }
    // The lease: this process's attempt, written only if nobody changed the entry since it was read.
    const leased: OutboxEntry = {
      ...fresh,
      next_at: start + this.timeoutMs + LEASE_MARGIN_MS,
      leased: true,
      leased_by: this.owner,
    };
    try {
      await this.store.write([claimOp(OUTBOX_KIND, fresh.key, leased, text, start)]);
    } catch (error) {
      if (isRecordConflict(error)) return "blocked";
      throw error;
    }
    const leasedText = await this.store.getRecordText(OUTBOX_KIND, fresh.key);
    const outcome = await attempt(
      adapter,
      leased.op,
      messageId,
      this.timeoutMs,
      this.stopping.signal,
      leased.key,
    );
    return this.settle(leased, leasedText, start, outcome, report);
  }

  /** The platform id of the message an edit changes: known, still to be sent ("wait"), or "gone". */
  private async editTarget(entry: OutboxEntry): Promise<string | "wait" | "gone"> {
    const op = entry.op;
    if (op.type !== "edit") return "gone";
    if (op.message_id !== null) return op.message_id;
    if (op.of_key === null) return "gone";
    const of = this.unmarked.get(op.of_key) ?? (await readOutboxEntry(this.store, op.of_key));
    if (of === null || of.state === "given_up") return "gone";
    if (of.state === "pending") return "wait";
    return of.message_id ?? "gone";
  }

  private async settle(
    leased: OutboxEntry,
    leasedText: string | null,
    start: number,
    outcome: AttemptOutcome,
    report: DeliveryReport,
  ): Promise<Step> {
    // Never older than the lease: a put with an older stamp would be ignored.
    const now = Math.max(this.now(), start);
    const attempts = leased.attempts + 1;
    if (outcome.kind === "delivered") {
      const done: OutboxEntry = {
        ...leased,
        leased: false,
        leased_by: undefined,
        op: outcome.op,
        state: "delivered",
        attempts,
        delivered_at: now,
        message_id: outcome.message_id,
      };
      // Persist first: a success is never sent again, whoever holds the lease now.
      try {
        await this.store.write([putOp(OUTBOX_KIND, done.key, done, now)]);
      } catch (error) {
        this.unmarked.set(done.key, done);
        this.tell(
          done,
          "platform_delivery_failed",
          `${done.key} was delivered but not yet marked (${errorMessage(error)}); it is not sent again`,
        );
      }
      report.delivered++;
      this.count("delivered_total", done.platform);
      this.tell(done, "platform_delivered", `${done.key} delivered (attempt ${attempts})`);
      return "sent";
    }
    const error = outcome.error;
    const old = now - leased.created_at >= this.maxAgeMs;
    const giveUp = !error.retryable || attempts >= this.maxAttempts || old;
    const wait = error.retry_after_ms ?? this.backoff(attempts);
    const next: OutboxEntry = {
      ...leased,
      leased: false,
      leased_by: undefined,
      op: outcome.op,
      attempts,
      last_error: error.message,
      asked_wait: error.retry_after_ms !== null,
      ...(giveUp ? { state: "given_up" as const, next_at: now } : { next_at: now + wait }),
    };
    try {
      // Only over our own lease: if another process took the entry over meanwhile, its word stands.
      if (leasedText === null)
        throw new TenaxError("record_conflict", `${leased.key} vanished during its attempt`);
      await this.store.write([claimOp(OUTBOX_KIND, next.key, next, leasedText, now)]);
    } catch (e) {
      if (!isRecordConflict(e)) throw e;
      return "blocked";
    }
    if (giveUp) {
      report.given_up++;
      this.count("given_up_total", next.platform);
      const why = !error.retryable
        ? `${error.message}; retrying will not fix it`
        : old
          ? `${error.message}; still failing ${Math.round((now - leased.created_at) / 60_000)} min after it was queued`
          : `${error.message}; ${attempts} attempts, the last one allowed`;
      this.tell(next, "platform_delivery_given_up", `${next.key} was given up: ${why}`);
      return "given_up";
    }
    report.failed++;
    this.count("failed_total", next.platform);
    this.tell(
      next,
      "platform_delivery_failed",
      `${next.key} not delivered (attempt ${attempts}): ${error.message}; next try in ${Math.round(wait / SECOND)} s`,
    );
    return "blocked";
  }

  private async writeUnmarked(): Promise<void> {
    for (const [key, done] of this.unmarked) {
      await this.store.write([putOp(OUTBOX_KIND, key, done, Math.max(this.now(), done.delivered_at ?? 0))]);
      this.unmarked.delete(key);
    }
  }

  private count(which: keyof OutboxStats, platform: string): void {
    this.counts[which][platform] = (this.counts[which][platform] ?? 0) + 1;
  }

  private tell(entry: OutboxEntry | null, type: PlatformEvent["type"], message: string): void {
    this.options.onEvent?.({
      type,
      layer: "platforms",
      platform: entry?.platform ?? "",
      chat: entry?.chat_key ?? null,
      key: entry?.key ?? null,
      message,
    });
  }
}
