// The store's continuous verification: SQLite's own check of state.db, then of search.db, one file
// a slice, each in a worker thread on a read-only connection of its own. A check reads one
// consistent snapshot, as any reader does: a page whose latest committed version is in the WAL is
// read from the WAL, and a checkpoint never moves pages under it. The slices are paced so that
// every page is checked at least every `everyMs`, while the checks take at most `cpuShare` of one
// core on average (a store too big for both is checked less often, never harder). Damage goes the
// way damage a write meets goes (Store.checkState: sticky corrupt, `store.corrupt`, writes
// spooled); damage in search.db only rebuilds the index.
import type { IntegrityResult } from "./integrity.js";

/** What the verifier checks: the writing Store. */
export interface VerifyTarget {
  checkState(
    mode: "quick" | "full",
    timeoutMs: number,
    announce: "always" | "changes",
  ): Promise<IntegrityResult>;
  /** null when the index is not in use (being rebuilt, paused, degraded): nothing to check. */
  checkSearch(timeoutMs: number, scope: "file" | "tables"): Promise<IntegrityResult | null>;
}

/** Runs `fn` once at a clock time: the process's one scheduler (`Scheduler.at`). */
export type WakeAt = (name: string, dueAt: number, fn: () => unknown) => { cancel(): void };

export interface VerifierOptions {
  target: VerifyTarget;
  /** Every page of both files is checked at least this often, when `cpuShare` allows; 0: never. */
  everyMs: number;
  /** The largest share of one core the checks may take on average (0.01: 1%). */
  cpuShare: number;
  now: () => number;
  wakeAt: WakeAt;
  /** A slice still running after this is reported unknown; its result counts when it ends. */
  sliceTimeoutMs?: number;
}

type SliceFile = "state.db" | "search.db";

interface Slice {
  file: SliceFile;
  run(target: VerifyTarget, timeoutMs: number): Promise<IntegrityResult | null>;
}

/**
 * One file a slice. SQLite checks a file only whole or one table at a time, and the messages table
 * is nearly all of state.db (docs/PERFORMANCE.md): a finer slice would need pages read outside
 * SQLite's snapshot. `integrity_check` of the whole of state.db also compares every index with its
 * table and accounts for every page (the freelist, pages used twice or never), so a page
 * overwritten with another well-formed page is found too. search.db, derived and rebuilt when
 * damaged, gets the b-tree check of its tables: FTS5's own check of the index's contents would
 * cost ten times as much.
 */
const SLICES: readonly Slice[] = [
  { file: "state.db", run: (target, ms) => target.checkState("full", ms, "changes") },
  { file: "search.db", run: (target, ms) => target.checkSearch(ms, "tables") },
];

export interface VerifierPass {
  started_at: number;
  ended_at: number;
  /** The checks' CPU time (their threads'), or their length where the system does not tell. */
  busy_ms: number;
  state: IntegrityResult["status"] | null;
  search: IntegrityResult["status"] | "skipped" | null;
}

export interface VerifierHealth {
  every_ms: number;
  cpu_share: number;
  /** The last whole pass over both files; null before the first ends. */
  last_pass: VerifierPass | null;
  /** When the next slice runs; null when stopped. */
  next_at: number | null;
  /** The damage that stopped the verifier (the store is corrupt from then on). */
  found: IntegrityResult | null;
}

/** A check of a very big file can take minutes; it runs in its own thread all the while. */
const SLICE_TIMEOUT_MS = 10 * 60_000;

export class StoreVerifier {
  private job: { cancel(): void } | null = null;
  private stopped = true;
  private nextSlice = 0;
  private nextAt: number | null = null;
  private pass: VerifierPass | null = null;
  private lastPass: VerifierPass | null = null;
  private found: IntegrityResult | null = null;
  /** Slices never overlap: a pass asked for by `once()` waits for the one under way. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: VerifierOptions) {}

  /** The first slice after one slot (the store was just checked as it opened), then paced. */
  start(): void {
    if (!this.stopped || this.options.everyMs <= 0 || this.found !== null) return;
    this.stopped = false;
    this.wake(this.options.now() + this.slotMs());
  }

  stop(): void {
    this.stopped = true;
    this.job?.cancel();
    this.job = null;
    this.nextAt = null;
  }

  /** A whole pass now, both files, whatever the schedule; resolves when it has ended. */
  async once(): Promise<VerifierPass> {
    const pass = this.newPass();
    for (const slice of SLICES) {
      if (this.found !== null) break;
      await this.exclusive(() => this.runSlice(slice, pass));
    }
    return this.endPass(pass);
  }

  health(): VerifierHealth {
    return {
      every_ms: this.options.everyMs,
      cpu_share: this.options.cpuShare,
      last_pass: this.lastPass,
      next_at: this.nextAt,
      found: this.found,
    };
  }

  /** The time each slice is given when checks are cheap: the pass spread evenly over `everyMs`. */
  private slotMs(): number {
    return this.options.everyMs / SLICES.length;
  }

  private wake(at: number): void {
    const slice = SLICES[this.nextSlice] as Slice;
    this.nextAt = at;
    this.job = this.options.wakeAt(`store: verify ${slice.file}`, at, () => this.step());
  }

  /** The scheduled slice: run it, then wake for the next one after its slot, or later if it was costly. */
  private async step(): Promise<void> {
    this.job = null;
    if (this.stopped) return;
    const slice = SLICES[this.nextSlice] as Slice;
    if (this.nextSlice === 0 || this.pass === null) this.pass = this.newPass();
    const pass = this.pass;
    const started = this.options.now();
    const busy = await this.exclusive(() => this.runSlice(slice, pass));
    this.nextSlice = (this.nextSlice + 1) % SLICES.length;
    if (this.nextSlice === 0) this.endPass(pass);
    if (this.stopped || this.found !== null) return;
    this.wake(started + Math.max(this.slotMs(), busy / this.options.cpuShare));
  }

  /** Check one file; returns what the check cost a core (ms). Damage in state.db ends the verifier. */
  private async runSlice(slice: Slice, pass: VerifierPass): Promise<number> {
    let result: IntegrityResult | null;
    try {
      result = await slice.run(this.options.target, this.options.sliceTimeoutMs ?? SLICE_TIMEOUT_MS);
    } catch {
      // The check could not start (no thread for it, say): unknown, and tried again next pass.
      if (slice.file === "state.db") pass.state = "unknown";
      else pass.search = "unknown";
      return 0;
    }
    // What the check cost a core: its thread's CPU time where known, else (conservatively) its length.
    const busy = result === null ? 0 : (result.cpu_ms ?? result.duration_ms);
    pass.busy_ms += busy;
    if (slice.file === "state.db") pass.state = result?.status ?? null;
    else pass.search = result?.status ?? "skipped";
    if (slice.file === "state.db" && result?.status === "corrupt") {
      this.found = result;
      this.stop();
    }
    return busy;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private newPass(): VerifierPass {
    const now = this.options.now();
    return { started_at: now, ended_at: now, busy_ms: 0, state: null, search: null };
  }

  private endPass(pass: VerifierPass): VerifierPass {
    pass.ended_at = this.options.now();
    this.lastPass = pass;
    return pass;
  }
}
