// The durable outbox: everything Tenax sends on its own (chat platforms' messages, cron's results
// and notices) is an entry in the store before anything is sent, written with what produced it;
// Outbox sends what is due through each entry's channel. Its invariants:
// - each attempt is leased in the store first (a record.claim over the text just read), so
//   processes sharing the store never send one entry at the same time; the lease names its owner,
//   and a lease whose owner has ended is over (a restart after kill -9 resends at once);
// - after a success the delivered mark (with the channel's receipt) is the first write, so nothing
//   delivered is sent again; a mark the store refused is kept in memory and written first next
//   pass, and the entry is not sent again meanwhile;
// - one lane's entries go strictly in order: while the earliest pending one waits, nothing later
//   in its lane is sent; entries in different lanes go in parallel;
// - a retryable failure waits what the receiver asked for exactly when it named a wait, else the
//   channel's backoff; past the channel's attempts or age, or on a failure retrying will not fix,
//   the entry is given up, and the channel reports it;
// - an entry whose channel this process does not have, or whose payload the channel cannot read,
//   is left pending for a process that can.

import type { Scheduler, Job as SchedulerJob } from "../agent/scheduler.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import { localOwners, type Owners, ownerIsGone } from "../core/owners.js";
import { Passes } from "../core/passes.js";
import type { StorePort } from "../store/port.js";
import { claimOp, isRecordConflict, LEASE_MARGIN_MS, putOp } from "../store/record-ops.js";
import { adoptLegacy } from "./adopt.js";
import { boundedAttempt } from "./attempt.js";
import { type OutboxBacklog, readOutboxBacklog } from "./backlog.js";
import type { OutboxChannel, SendOutcome } from "./channel.js";
import {
  listEntries,
  type NewEntry,
  newEntry,
  OUTBOX_KIND,
  type OutboxEntry,
  parseEntry,
  readEntry,
} from "./entry.js";

export interface OutboxOptions {
  store: StorePort;
  now?: () => number;
  /** Who this process is in a lease, and whether another holder has ended (core/owners.ts). */
  owners?: Owners;
  /** Lanes sent to at once; default 8. */
  parallel?: number;
}

export interface DeliveryReport {
  delivered: number;
  failed: number;
  given_up: number;
}

export interface OutboxStats {
  /** Since this process started, per channel. */
  delivered_total: Record<string, number>;
  failed_total: Record<string, number>;
  given_up_total: Record<string, number>;
}

const SECOND = 1_000;
const HOUR = 3_600 * SECOND;
const PRUNE_EVERY_MS = HOUR;
const IDLE_MAX_MS = 30 * SECOND;

type Step = "sent" | "given_up" | "blocked";

export class Outbox {
  private readonly store: StorePort;
  private readonly now: () => number;
  private readonly owner: string;
  private readonly gone: (owner: string) => boolean;
  private readonly channels = new Map<string, OutboxChannel>();
  /** Lanes being sent from this process: an overlapping pass leaves them alone. */
  private readonly held = new Set<string>();
  /** Entries delivered whose mark could not be written yet: the next pass writes it, never resends. */
  private readonly unmarked = new Map<string, OutboxEntry>();
  private readonly counts: OutboxStats = { delivered_total: {}, failed_total: {}, given_up_total: {} };
  private readonly jobs: SchedulerJob[] = [];
  private readonly stopping = new AbortController();
  /** Channels whose earlier entries are still to be moved in (once per process). */
  private readonly toAdopt = new Set<string>();
  /** After a pass that found nothing to do: the kind's stamp then, and when something is due. */
  private idle: { stamp: string; until: number } | null = null;

  private readonly passes = new Passes(
    () => this.deliverDue(),
    () => this.stopping.signal.aborted,
  );

  constructor(private readonly options: OutboxOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
    const owners = options.owners ?? localOwners();
    this.owner = owners.self;
    this.gone = (owner) => ownerIsGone(owners, owner);
  }

  /** Send this channel's entries from now on (a channel of the same name is replaced). */
  add<P>(channel: OutboxChannel<P>): this {
    this.channels.set(channel.name, channel as OutboxChannel);
    if (channel.legacy !== undefined) this.toAdopt.add(channel.name);
    this.idle = null;
    return this;
  }

  /**
   * Send this channel's entries no more (another process sends them now): they stay pending in the
   * store; an attempt already under way ends as it would have.
   */
  remove(name: string): this {
    this.channels.delete(name);
    this.toAdopt.delete(name);
    this.idle = null;
    return this;
  }

  channelNames(): string[] {
    return [...this.channels.keys()];
  }

  /**
   * Write one entry on its own and start sending it; `created` is false when an entry with this
   * key was already there (a repeated enqueue), which is then left as it is.
   */
  async enqueue<P>(input: NewEntry<P>): Promise<{ key: string; created: boolean }> {
    const now = this.now();
    const { entry } = newEntry(input, now);
    try {
      await this.store.write([claimOp(OUTBOX_KIND, entry.key, entry, null, now)]);
    } catch (error) {
      if (isRecordConflict(error)) return { key: entry.key, created: false };
      throw error;
    }
    void this.kick();
    return { key: entry.key, created: true };
  }

  /** When an entry may be taken: its next_at, or now when its lease's owner has ended. */
  dueAt(entry: Pick<OutboxEntry, "next_at" | "leased_by">, now: number): number {
    return entry.leased_by !== undefined && entry.next_at > now && this.gone(entry.leased_by)
      ? now
      : entry.next_at;
  }

  /** Send what is due, each lane in order. Never throws: what fails is counted and retried later. */
  async deliverDue(): Promise<DeliveryReport> {
    const report: DeliveryReport = { delivered: 0, failed: 0, given_up: 0 };
    try {
      await this.writeUnmarked();
      await this.adoptLegacy();
      // An idle outbox does not read every entry each second: nothing written since its last
      // look and nothing due yet means nothing to send (a full look at least every IDLE_MAX_MS,
      // in case a write by a process with a slower clock left the stamp as it was).
      const now = this.now();
      const stamp = await this.store.recordStamp(OUTBOX_KIND);
      if (this.idle !== null && this.idle.stamp === stamp && now < this.idle.until) return report;
      this.idle = null;
      const lanes = new Map<string, OutboxEntry[]>();
      let soonest = now + IDLE_MAX_MS;
      for (const e of await listEntries(this.store)) {
        if (e.state !== "pending" || this.unmarked.has(e.key) || !this.channels.has(e.channel)) continue;
        soonest = Math.min(soonest, this.dueAt(e, now));
        const lane = lanes.get(e.lane) ?? [];
        lane.push(e);
        lanes.set(e.lane, lane);
      }
      if (soonest > now && this.held.size === 0) {
        this.idle = { stamp, until: soonest };
        return report;
      }
      const queue = [...lanes].filter(([lane]) => !this.held.has(lane));
      for (const [lane] of queue) this.held.add(lane);
      const worker = async () => {
        for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
          const [lane, entries] = next;
          try {
            await this.sendLane(
              entries.sort((a, b) => (a.order < b.order ? -1 : 1)),
              report,
            );
          } finally {
            this.held.delete(lane);
          }
        }
      };
      const parallel = Math.max(1, this.options.parallel ?? 8);
      await Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker));
    } catch (error) {
      report.failed++;
      for (const channel of this.channels.values())
        channel.report({
          type: "failed",
          entry: null,
          message: `the outbox could not be read: ${errorMessage(error)}`,
        });
    }
    return report;
  }

  /** Per channel: what waits and what was given up, from the store (every process's entries). */
  async backlog(): Promise<Record<string, OutboxBacklog>> {
    return await readOutboxBacklog(
      this.store,
      this.channelNames(),
      new Set(this.unmarked.keys()),
      this.now(),
    );
  }

  /** This process's counts of delivered, failed and given-up attempts, per channel. */
  stats(): OutboxStats {
    return structuredClone(this.counts);
  }

  /** Deliver every `everyMs` on the process's scheduler, and prune old entries hourly. */
  maintainOn(scheduler: Scheduler, everyMs = SECOND): void {
    if (this.jobs.length > 0) return;
    this.jobs.push(scheduler.every("outbox: deliver", everyMs, () => this.deliverDue()));
    this.jobs.push(scheduler.every("outbox: prune", PRUNE_EVERY_MS, () => this.prune()));
  }

  /**
   * Deliver now (an entry was written); a kick during a pass asks for one more after it.
   * Resolves when the passes end; never rejects (callers may leave it unawaited).
   */
  kick(): Promise<void> {
    return this.passes.kick();
  }

  /**
   * The channel answers again (its adapter reconnected): what waits out a backoff step is due
   * now, not up to minutes later. An entry an attempt holds (its lease), or one waiting out a
   * wait the receiver asked for (a 429's retry_after), is left alone, and each is moved only
   * over the text just read, so a process that changed it meanwhile keeps its word.
   * Resolves with how many entries were woken, once the pass that sends them has ended.
   */
  async wake(channel: string): Promise<number> {
    const now = this.now();
    let woken = 0;
    for (const row of await this.store.listRecords(OUTBOX_KIND)) {
      const entry = parseEntry(row.value);
      if (entry === null || entry.channel !== channel || entry.state !== "pending") continue;
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

  /**
   * Delete delivered and given-up entries last written longer ago than their channel keeps them
   * (`olderThanMs` for every channel, when given); how many. Entries of channels this process
   * does not have are kept for 30 days.
   */
  async prune(olderThanMs?: number): Promise<number> {
    const now = this.now();
    const ops = (await this.store.listRecords(OUTBOX_KIND)).flatMap((row) => {
      const e = parseEntry(row.value);
      const keep = olderThanMs ?? this.channels.get(e?.channel ?? "")?.policy.retainMs ?? 720 * HOUR;
      if (e === null || e.state === "pending" || row.updated_at > now - keep) return [];
      return [putOp(OUTBOX_KIND, row.key, null, Math.max(now, row.updated_at))];
    });
    for (let i = 0; i < ops.length; i += 200) await this.store.write(ops.slice(i, i + 200));
    return ops.length;
  }

  /** One lane's pending entries, oldest first: each is sent only once the one before it is done. */
  private async sendLane(entries: OutboxEntry[], report: DeliveryReport): Promise<void> {
    for (const entry of entries) {
      if (this.stopping.signal.aborted) return;
      let step: Step;
      try {
        step = await this.deliverOne(entry, report);
      } catch (error) {
        report.failed++;
        this.tell(entry, "failed", `${this.describe(entry)}: sending failed: ${errorMessage(error)}`);
        return;
      }
      if (step === "blocked") return;
    }
  }

  private async deliverOne(entry: OutboxEntry, report: DeliveryReport): Promise<Step> {
    const channel = this.channels.get(entry.channel);
    const text = await this.store.getRecordText(OUTBOX_KIND, entry.key);
    // Read again: another process may have sent or leased it since the pass listed it.
    const fresh = text === null ? null : parseEntry(JSON.parse(text));
    const start = this.now();
    if (channel === undefined || fresh === null) return "blocked";
    if (fresh.state !== "pending") return "sent";
    if (this.dueAt(fresh, start) > start) return "blocked";
    const payload = channel.parse(fresh.payload);
    if (payload === null) return "blocked";
    let prepared: string | null = null;
    if (channel.ready !== undefined) {
      const readiness = await channel.ready({ ...fresh, payload }, (key) => this.lookup(key));
      if (readiness === "wait") return "blocked";
      if ("give_up" in readiness) {
        const outcome = { kind: "give_up" as const, error: readiness.give_up };
        return await this.settle(channel, fresh, text, start, outcome, report);
      }
      prepared = readiness.ready;
    }
    // The lease: this process's attempt, written only if nobody changed the entry since it was read.
    const leased: OutboxEntry = {
      ...fresh,
      next_at: start + channel.policy.timeoutMs + LEASE_MARGIN_MS,
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
    const outcome = await boundedAttempt(
      channel,
      { ...leased, payload },
      this.stopping.signal,
      start,
      prepared,
    );
    return await this.settle(channel, leased, leasedText, start, outcome, report);
  }

  private async lookup(key: string): Promise<OutboxEntry | null> {
    return this.unmarked.get(key) ?? (await readEntry(this.store, key));
  }

  private async settle(
    channel: OutboxChannel,
    leased: OutboxEntry,
    leasedText: string | null,
    start: number,
    outcome: SendOutcome<unknown>,
    report: DeliveryReport,
  ): Promise<Step> {
    // Never older than the lease: a put with an older stamp would be ignored.
    const now = Math.max(this.now(), start);
    const attempts = leased.attempts + 1;
    const payload = outcome.payload ?? leased.payload;
    if (outcome.kind === "delivered") {
      const done: OutboxEntry = {
        ...leased,
        leased: false,
        leased_by: undefined,
        payload,
        state: "delivered",
        attempts,
        delivered_at: now,
        receipt: outcome.receipt,
      };
      // Persist first: a success is never sent again, whoever holds the lease now.
      try {
        await this.store.write([putOp(OUTBOX_KIND, done.key, done, now)]);
      } catch (error) {
        this.unmarked.set(done.key, done);
        this.tell(
          done,
          "failed",
          `${this.describe(done)} was delivered but not yet marked (${errorMessage(error)}); it is not sent again`,
        );
      }
      report.delivered++;
      this.count("delivered_total", done.channel);
      this.tell(done, "delivered", `${this.describe(done)} delivered (attempt ${attempts})`);
      return "sent";
    }
    const { policy } = channel;
    const old = now - leased.created_at >= policy.maxAgeMs;
    const giveUp = outcome.kind === "give_up" || attempts >= policy.maxAttempts || old;
    const asked = outcome.kind === "retry" ? outcome.retryAfterMs : null;
    const wait = asked ?? policy.backoff(attempts);
    const next: OutboxEntry = {
      ...leased,
      leased: false,
      leased_by: undefined,
      payload,
      attempts,
      last_error: outcome.error,
      asked_wait: asked !== null,
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
      this.count("given_up_total", next.channel);
      const why =
        outcome.kind === "give_up"
          ? outcome.error
          : old
            ? `${outcome.error}; still failing ${Math.round((now - leased.created_at) / 60_000)} min after it was queued`
            : `${outcome.error}; ${attempts} attempts, the last one allowed`;
      this.tell(next, "given_up", `${this.describe(next)} was given up: ${why}`);
      return "given_up";
    }
    report.failed++;
    this.count("failed_total", next.channel);
    this.tell(
      next,
      "failed",
      `${this.describe(next)} not delivered (attempt ${attempts}): ${outcome.error}; next try in ${Math.round(wait / SECOND)} s`,
    );
    return "blocked";
  }

  /** Entries of channels that kept them under a kind of their own, moved in (once per process). */
  private async adoptLegacy(): Promise<void> {
    for (const name of [...this.toAdopt]) {
      const legacy = this.channels.get(name)?.legacy;
      if (legacy !== undefined) await adoptLegacy(this.store, legacy, this.now);
      this.toAdopt.delete(name);
    }
  }

  private async writeUnmarked(): Promise<void> {
    for (const [key, done] of this.unmarked) {
      await this.store.write([putOp(OUTBOX_KIND, key, done, Math.max(this.now(), done.delivered_at ?? 0))]);
      this.unmarked.delete(key);
    }
  }

  private describe(entry: OutboxEntry): string {
    const channel = this.channels.get(entry.channel);
    const payload = channel?.parse(entry.payload) ?? null;
    return channel === undefined || payload === null ? entry.key : channel.describe({ ...entry, payload });
  }

  private count(which: keyof OutboxStats, channel: string): void {
    this.counts[which][channel] = (this.counts[which][channel] ?? 0) + 1;
  }

  private tell(entry: OutboxEntry, type: "delivered" | "failed" | "given_up", message: string): void {
    const channel = this.channels.get(entry.channel);
    const payload = channel?.parse(entry.payload) ?? null;
    if (channel === undefined || payload === null) return;
    channel.report({ type, entry: { ...entry, payload }, message });
  }
}
