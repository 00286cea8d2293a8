// One process's live view of its providers' health, and the durable record behind it. Every model
// call's end and every probe's answer is an observation; the view changes at once (the gateway's
// /health reads it), while the store is written only when it matters: a change of state at once
// (at most one write a second per provider), repeated failures at most every 5 s, and a success
// after a success once a minute. A write per call would cost every turn a transaction. Every
// message it keeps is redacted by the profile's secrets first, whatever said it: a provider's error
// quoting a key, or a probe's (which no provider boundary redacts), reaches no view.
import type { Redactor } from "../core/redact.js";
import type { RecordPutOp } from "../store/ops.js";
import {
  countsAgainstProvider,
  mergeRecords,
  type ProviderObservation,
  type ProviderRecord,
  probeCountsAgainstProvider,
  providerCondition,
  providerRecordOp,
  type RecordSource,
  readProviderRecord,
  withObservation,
} from "./provider-state.js";
import type { CallOutcome } from "./route-events.js";

/** What the recorder writes to: the profile's store. */
export interface RecordWriter extends RecordSource {
  write(ops: RecordPutOp[]): Promise<unknown>;
}

export interface WriteThrottle {
  /** Least time between two writes of one provider, even for a change of state. */
  change_ms: number;
  /** A failure after a written failure. */
  failing_ms: number;
  /** A success after a written success (only to keep "last answered" fresh for other processes). */
  ok_ms: number;
}

export const DEFAULT_WRITE_THROTTLE: WriteThrottle = { change_ms: 1000, failing_ms: 5000, ok_ms: 60_000 };

export interface RecorderOptions {
  store: RecordWriter;
  now: () => number;
  throttle?: Partial<WriteThrottle>;
  /** The profile's secrets (ProfileSecrets.redactor), redacted by value from every message kept. */
  redactor?: Pick<Redactor, "redactMessage">;
  /** A write that failed (the store's own health says why); the view is kept and written with the next change. */
  onError?: (provider: string, error: unknown) => void;
}

interface Entry {
  record: ProviderRecord;
  /** What this process last wrote (or read at first sight), and when it wrote it. */
  written: ProviderRecord | null;
  written_at: number;
  dirty: boolean;
  writing: Promise<void> | null;
}

export interface ProviderCounters {
  /** Calls by provider and outcome (ok, failed), in this process. */
  calls: Map<string, { provider: string; outcome: "ok" | "failed"; count: number }>;
  /** Failed calls by provider and classified reason. */
  failures: Map<string, { provider: string; reason: string; count: number }>;
  /** Probes by provider and outcome. */
  probes: Map<string, { provider: string; outcome: "ok" | "failed"; count: number }>;
}

/**
 * The last time this process could not even open a connection to a provider (EMFILE and its kin,
 * `local_resources`): no provider's fault, so it is kept apart, for the gateway's own component.
 */
export interface LocalExhaustion {
  at: number;
  provider: string;
  source: "call" | "probe";
  message: string;
}

export class ProviderHealthRecorder {
  private readonly entries = new Map<string, Entry>();
  /** The store reads of new entries still under way (flush waits for them). */
  private readonly loading = new Set<Promise<void>>();
  private local: LocalExhaustion | null = null;
  private readonly throttle: WriteThrottle;
  readonly counters: ProviderCounters = { calls: new Map(), failures: new Map(), probes: new Map() };

  constructor(private readonly options: RecorderOptions) {
    this.throttle = { ...DEFAULT_WRITE_THROTTLE, ...options.throttle };
  }

  /** A model call ended (router.call): an answer, or a failure the classifier named. */
  observeCall(outcome: CallOutcome): void {
    if (!outcome.ok && outcome.error.reason === "local_resources")
      this.noteLocal(outcome.provider, "call", outcome.at, outcome.error.message);
    if (!outcome.ok && !countsAgainstProvider(outcome.error)) return;
    const observation: ProviderObservation = outcome.ok
      ? { ok: true, at: outcome.at, model: outcome.model, reason: null, message: null }
      : {
          ok: false,
          at: outcome.at,
          model: outcome.model,
          reason: outcome.error.reason,
          message: outcome.error.message,
        };
    bump(this.counters.calls, `${outcome.provider} ${outcome.ok}`, {
      provider: outcome.provider,
      outcome: outcome.ok ? "ok" : "failed",
    });
    if (!outcome.ok)
      bump(this.counters.failures, `${outcome.provider} ${outcome.error.reason}`, {
        provider: outcome.provider,
        reason: outcome.error.reason,
      });
    this.observe(outcome.provider, "call", observation);
  }

  /** A background probe answered (or could not reach the provider). */
  observeProbe(provider: string, observation: ProviderObservation): void {
    if (observation.reason === "local_resources")
      this.noteLocal(provider, "probe", observation.at, observation.message ?? "");
    if (!probeCountsAgainstProvider(observation)) return;
    bump(this.counters.probes, `${provider} ${observation.ok}`, {
      provider,
      outcome: observation.ok ? "ok" : "failed",
    });
    this.observe(provider, "probe", observation);
  }

  /** When this process last ran out of descriptors reaching a provider; null if it never did. */
  localExhaustion(): LocalExhaustion | null {
    return this.local;
  }

  private noteLocal(provider: string, source: "call" | "probe", at: number, message: string): void {
    if (this.local !== null && this.local.at > at) return;
    const redactor = this.options.redactor;
    this.local = { at, provider, source, message: redactor ? redactor.redactMessage(message) : message };
  }

  /** The live view: every provider this process has observed or read. */
  view(): ReadonlyMap<string, ProviderRecord> {
    return new Map([...this.entries].map(([name, e]) => [name, e.record]));
  }

  /** Write whatever is due now (a scheduler job runs this every second). */
  flushDue(): void {
    const now = this.options.now();
    for (const [provider, entry] of this.entries) if (this.due(entry, now)) void this.write(provider, entry);
  }

  /** Write everything not yet written (at close), and wait for it. */
  async flush(): Promise<void> {
    await Promise.all(this.loading);
    for (const [provider, entry] of this.entries) {
      if (entry.writing) await entry.writing;
      if (entry.dirty) await this.write(provider, entry);
    }
  }

  private observe(provider: string, source: "call" | "probe", observation: ProviderObservation): void {
    const entry = this.entry(provider);
    const next = withObservation(entry.record, source, this.redacted(observation));
    if (next === entry.record) return;
    entry.record = next;
    entry.dirty = true;
    if (this.due(entry, this.options.now())) void this.write(provider, entry);
  }

  private redacted(observation: ProviderObservation): ProviderObservation {
    const { redactor } = this.options;
    if (redactor === undefined || observation.message === null) return observation;
    return { ...observation, message: redactor.redactMessage(observation.message) };
  }

  /** The store's record, its messages redacted too (one written before a secret was added). */
  private async read(provider: string): Promise<ProviderRecord | null> {
    const stored = await readProviderRecord(this.options.store, provider);
    if (stored === null || this.options.redactor === undefined) return stored;
    return {
      ...stored,
      last_call: stored.last_call && this.redacted(stored.last_call),
      last_probe: stored.last_probe && this.redacted(stored.last_probe),
    };
  }

  /**
   * Synchronous by contract (observeCall runs on the model call's path, and view() is read by
   * /health): a new entry starts from what this process saw, and takes in the store's record
   * (another process may have written it: transitions are counted from what the store holds)
   * once the read refreshing it answers; a write reads the store again and merges in any case.
   */
  private entry(provider: string): Entry {
    let entry = this.entries.get(provider);
    if (entry === undefined) {
      const created: Entry = {
        record: { last_call: null, last_probe: null, last_success_at: null, failing_since: null },
        written: null,
        written_at: Number.NEGATIVE_INFINITY,
        dirty: false,
        writing: null,
      };
      entry = created;
      this.entries.set(provider, entry);
      const load = this.read(provider).then(
        (stored) => {
          if (stored === null) return;
          created.record = mergeRecords(stored, created.record) ?? created.record;
          created.written ??= stored;
        },
        () => {
          // An unreadable store is the store component's news; this view starts empty.
        },
      );
      this.loading.add(load);
      void load.finally(() => this.loading.delete(load));
    }
    return entry;
  }

  private due(entry: Entry, now: number): boolean {
    if (!entry.dirty || entry.writing !== null) return false;
    const since = now - entry.written_at;
    const before = entry.written === null ? "unknown" : providerCondition(entry.written, false);
    const after = providerCondition(entry.record, false);
    if (before !== after) return since >= this.throttle.change_ms;
    return since >= (after === "failing" ? this.throttle.failing_ms : this.throttle.ok_ms);
  }

  private write(provider: string, entry: Entry): Promise<void> {
    const now = this.options.now();
    // Marked at once (not after the read): due() sees this write under way and the throttle runs.
    entry.dirty = false;
    entry.written_at = now;
    // What this write carries is what was observed when it was decided; later observations are
    // the next write's (they leave the entry dirty).
    const mine = entry.record;
    const done = (async () => {
      // Fold in what other processes wrote since, so the newest of each fact survives.
      let stored: ProviderRecord | null = null;
      try {
        stored = await this.read(provider);
      } catch {
        // Written as this process sees it; the store's own health says why it could not be read.
      }
      const record = mergeRecords(stored, mine) ?? mine;
      entry.record = entry.record === mine ? record : (mergeRecords(record, entry.record) ?? entry.record);
      const op = providerRecordOp(provider, record, now);
      // Not marked dirty again on failure: a store that refuses writes would spool one every few
      // seconds; the next observation tries again.
      try {
        await this.options.store.write([op]);
        entry.written = record;
      } catch (error) {
        this.options.onError?.(provider, error);
      }
    })();
    entry.writing = done.finally(() => {
      entry.writing = null;
    });
    return entry.writing;
  }
}

function bump<R extends { count: number }>(map: Map<string, R>, key: string, labels: Omit<R, "count">): void {
  const row = map.get(key);
  if (row) row.count++;
  else map.set(key, { ...labels, count: 1 } as R);
}
