// The circuit breakers of every model of a profile, shared by its processes through the store's
// records: before each attempt a call asks whether its model may be called (closed), may be
// probed (half-open: exactly one caller wins the claim, across processes), or is open; after it,
// the attempt's outcome moves the record (breaker-state.ts). Every write is a claim over the text
// read, so two processes never lose each other's count. Each change is an event for the caller.
import { ownerGone, ownerOf } from "../core/process-owner.js";
import type { RecordClaimOp } from "../store/ops.js";
import { claimOp, isRecordConflict } from "../store/record-ops.js";
import {
  type Admission,
  admit,
  afterFailure,
  afterNeutral,
  afterSuccess,
  BREAKER_RECORD_KIND,
  type BreakerRecord,
  type BreakerSettings,
  breakerKey,
  type Circuit,
  circuitOf,
  countsAgainstModel,
  DEFAULT_BREAKER,
  parseBreakerRecord,
  type Transition,
} from "./breaker-state.js";
import { type ClassifiedError, ERROR_REASONS, type ErrorReason } from "./classified-error.js";
import type { StatusEvent, Target } from "./route-events.js";

/** Where the records live: the profile's store, or this process's memory. */
export interface BreakerRecords {
  /** A record's JSON text as stored (what a claim compares with), or null. */
  read(key: string): Promise<string | null>;
  /** Write `value` if the record is still `expect`; false when another writer came first. */
  claim(key: string, value: BreakerRecord, expect: string | null): Promise<boolean>;
  /** Every record. */
  list(): Promise<BreakerRecord[]>;
}

/** What the store adapter needs of the Store: its record reads and its writes. */
export interface BreakerStoreLike {
  getRecordText(kind: string, key: string): Promise<string | null>;
  listRecords<T = unknown>(kind: string): Promise<Array<{ key: string; value: T }>>;
  write(ops: RecordClaimOp[]): Promise<unknown>;
}

/** Records in one process's memory: for tests, and for runs without a store. */
export class MemoryBreakerRecords implements BreakerRecords {
  private readonly texts: Map<string, string>;

  /** Start from known records' texts (what a store held before it failed). */
  constructor(initial: ReadonlyMap<string, string> = new Map()) {
    this.texts = new Map(initial);
  }

  async read(key: string): Promise<string | null> {
    return this.texts.get(key) ?? null;
  }

  async claim(key: string, value: BreakerRecord, expect: string | null): Promise<boolean> {
    if ((this.texts.get(key) ?? null) !== expect) return false;
    this.texts.set(key, JSON.stringify(value));
    return true;
  }

  async list(): Promise<BreakerRecord[]> {
    return [...this.texts.values()].flatMap((t) => parseBreakerRecord(JSON.parse(t)) ?? []);
  }
}

/**
 * The records in the profile's store (kind "breaker"). A store that cannot be read or written
 * (damaged, its disk failed) leaves this process with its own memory of the breakers, starting
 * from what it last read: a model it knew was unwell is still skipped, and no call waits on it.
 */
export class StoreBreakerRecords implements BreakerRecords {
  private local: MemoryBreakerRecords | null = null;
  /** What each record last read as, to start this process's memory from should the store fail. */
  private readonly lastRead = new Map<string, string>();

  constructor(
    private readonly store: BreakerStoreLike,
    private readonly now: () => number,
  ) {}

  async read(key: string): Promise<string | null> {
    if (this.local !== null) return this.local.read(key);
    try {
      const text = await this.store.getRecordText(BREAKER_RECORD_KIND, key);
      if (text !== null) this.lastRead.set(key, text);
      return text;
    } catch {
      return this.goLocal().read(key);
    }
  }

  async claim(key: string, value: BreakerRecord, expect: string | null): Promise<boolean> {
    if (this.local !== null) return this.local.claim(key, value, expect);
    try {
      await this.store.write([claimOp(BREAKER_RECORD_KIND, key, value, expect, this.now())]);
      this.lastRead.set(key, JSON.stringify(value));
      return true;
    } catch (error) {
      if (isRecordConflict(error)) return false;
      return this.goLocal().claim(key, value, expect);
    }
  }

  async list(): Promise<BreakerRecord[]> {
    if (this.local !== null) return this.local.list();
    try {
      return (await this.store.listRecords(BREAKER_RECORD_KIND)).flatMap(
        (r) => parseBreakerRecord(r.value) ?? [],
      );
    } catch {
      return [];
    }
  }

  private goLocal(): MemoryBreakerRecords {
    this.local ??= new MemoryBreakerRecords(this.lastRead);
    return this.local;
  }
}

/** What a call learnt before its attempt: go, go as the one probe, or do not call at all. */
export type BreakerPass =
  | { decision: "closed" }
  | { decision: "probe"; token: string }
  | { decision: "open"; retry_at: number; reason: ErrorReason | null };

export type BreakerEvent = Extract<StatusEvent, { layer: "breaker" }>;

/** One model's circuit, as health shows it. */
export interface ModelCircuit {
  provider: string;
  model: string;
  circuit: Circuit;
  /** The reason of the last unwell failure; null when none is remembered. */
  reason: ErrorReason | null;
  failures: number;
  opened_at: number | null;
  /** When a call is let through again (the end of the cool-down); null while closed. */
  retry_at: number | null;
}

export interface CircuitBreakersOptions {
  records: BreakerRecords;
  settings?: Partial<BreakerSettings>;
  now: () => number;
  /** This process's tag (ownerOf); each probe's token is it plus a count. */
  owner?: string;
  /** Whether the process a tag names has ended (a dead process's probe is free at once). */
  gone?: (owner: string) => boolean;
}

/** How often a write lost to another writer is read and tried again before it gives up. */
const CLAIM_TRIES = 8;

export class CircuitBreakers {
  readonly settings: BreakerSettings;
  private readonly owner: string;
  private readonly gone: (token: string) => boolean;
  private probes = 0;

  constructor(private readonly options: CircuitBreakersOptions) {
    this.settings = { ...DEFAULT_BREAKER, ...options.settings };
    this.owner = options.owner ?? ownerOf();
    const gone = options.gone ?? ownerGone;
    // A token is "OWNER#N": the process is what may be gone.
    this.gone = (token) => gone(token.split("#")[0] ?? token);
  }

  /** Whether the model may be called now; a half-open circuit's one probe is claimed here. */
  async admit(target: Target, emit: (event: BreakerEvent) => void): Promise<BreakerPass> {
    if (!this.settings.enabled) return { decision: "closed" };
    const key = breakerKey(target);
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const text = await this.options.records.read(key);
      const record = parse(text);
      const now = this.options.now();
      const token = `${this.owner}#${this.probes + 1}`;
      const admission: Admission = admit(record, now, token, this.gone, this.settings);
      if (admission.decision === "closed") return { decision: "closed" };
      if (admission.decision === "open")
        return { decision: "open", retry_at: admission.retry_at, reason: asReason(admission.reason) };
      if (!(await this.options.records.claim(key, admission.claim, text))) continue;
      this.probes++;
      emit({
        type: "breaker_half_open",
        layer: "breaker",
        provider: target.provider,
        model: target.model,
        reason: asReason(admission.claim.reason),
        message: `${key}: circuit half-open after its cool-down; one probe call is let through (it failed with ${admission.claim.reason ?? "an unwell failure"} before)`,
      });
      return { decision: "probe", token };
    }
    // Only a probe's claim is written here: losing it this often means others took it first.
    return {
      decision: "open",
      retry_at: this.options.now() + this.settings.cooldown_ms,
      reason: asReason(parse(await this.options.records.read(key))?.reason ?? null),
    };
  }

  /** The attempt's end: an answer, a classified failure, or nothing learnt (null: aborted, no key). */
  async report(
    target: Target,
    pass: BreakerPass,
    outcome: { ok: true } | { ok: false; error: ClassifiedError } | null,
    emit: (event: BreakerEvent) => void,
  ): Promise<void> {
    if (!this.settings.enabled || pass.decision === "open") return;
    const token = pass.decision === "probe" ? pass.token : this.owner;
    const key = breakerKey(target);
    for (let tries = 0; tries < CLAIM_TRIES; tries++) {
      const text = await this.options.records.read(key);
      const record = parse(text);
      const now = this.options.now();
      let transition: Transition | null;
      if (outcome?.ok === true) transition = afterSuccess(record, now);
      else if (outcome !== null && countsAgainstModel(outcome.error))
        transition = afterFailure(record, target, outcome.error.reason, now, token, this.settings);
      else transition = afterNeutral(record, token, now);
      if (transition === null) return;
      if (!(await this.options.records.claim(key, transition.record, text))) continue;
      const event = describe(target, transition, record);
      if (event !== null) emit(event);
      return;
    }
  }

  /** Every model's circuit the records know of, and `targets` (closed when none is kept). */
  async circuits(targets: readonly Target[] = []): Promise<ModelCircuit[]> {
    return circuitsOf(await this.options.records.list(), targets, this.options.now());
  }
}

/** The circuits `records` show at `now`, for `targets` and every model with a record. */
export function circuitsOf(
  records: readonly BreakerRecord[],
  targets: readonly Target[],
  now: number,
): ModelCircuit[] {
  const byKey = new Map(records.map((r) => [breakerKey(r), r]));
  const keys = [...new Set([...targets.map(breakerKey), ...byKey.keys()])];
  return keys.map((key): ModelCircuit => {
    const record = byKey.get(key) ?? null;
    const target = record ?? targets.find((t) => breakerKey(t) === key) ?? { provider: "", model: key };
    const circuit = circuitOf(record, now);
    return {
      provider: target.provider,
      model: target.model,
      circuit,
      reason: record === null ? null : asReason(record.reason),
      failures: record?.failures ?? 0,
      opened_at: record?.state === "open" ? record.opened_at : null,
      retry_at: record?.state === "open" ? record.until : null,
    };
  });
}

function describe(target: Target, transition: Transition, before: BreakerRecord | null): BreakerEvent | null {
  const r = transition.record;
  const key = breakerKey(target);
  const base = { layer: "breaker" as const, provider: target.provider, model: target.model };
  switch (transition.change) {
    case "opened":
    case "reopened": {
      const cooldown = Math.max(0, (r.until ?? r.updated_at) - r.updated_at);
      const probeFailed = transition.change === "reopened";
      return {
        ...base,
        type: "breaker_opened",
        reason: asReason(r.reason) ?? "unknown",
        failures: r.failures,
        probe_failed: probeFailed,
        cooldown_ms: cooldown,
        retry_at: r.until ?? r.updated_at,
        message: probeFailed
          ? `${key}: circuit open again, its probe call failed (${r.reason}); calls skip it for ${Math.round(cooldown / 1000)} s, then one probe is let through`
          : `${key}: circuit open after ${r.failures} failures in a row (${r.reason}); calls skip it for ${Math.round(cooldown / 1000)} s, then one probe is let through`,
      };
    }
    case "closed":
      return {
        ...base,
        type: "breaker_closed",
        reason: asReason(before?.reason ?? null),
        message: `${key}: circuit closed, a call answered; calls go to it again`,
      };
    case "counted":
    case "released":
      return null;
    default: {
      const never: never = transition.change;
      return never;
    }
  }
}

function parse(text: string | null): BreakerRecord | null {
  if (text === null) return null;
  try {
    return parseBreakerRecord(JSON.parse(text));
  } catch {
    return null;
  }
}

function asReason(value: string | null): ErrorReason | null {
  return ERROR_REASONS.find((r) => r === value) ?? null;
}
