// The one periodic scheduler of a process: lease heartbeats, watchdogs and checks all register
// here, and a single timer wakes for whichever is due first. No timer or interval per session or
// per subagent. A job that throws is reported and rescheduled; one that returns false stops.
import { backgroundTimers, type Timers } from "../core/deps.js";
import { outsideSpans } from "../core/trace.js";

export interface Job {
  readonly name: string;
  /** Stop this job; it never runs again. */
  cancel(): void;
}

export interface SchedulerOptions {
  now?: () => number;
  /** The one timer it arms (real, unref'd, by default; fake time in tests, with `now`). */
  timers?: Timers;
  /** Where a job's failure is reported (it is rescheduled all the same). */
  onError?: (job: string, error: unknown) => void;
}

interface Entry {
  name: string;
  everyMs: number;
  due: number;
  fn: () => unknown;
  running: boolean;
  cancelled: boolean;
}

export class Scheduler {
  private readonly entries = new Set<Entry>();
  private timer: unknown = null;
  private timerDue = Number.POSITIVE_INFINITY;
  private stopped = false;
  /** How late the timer fired, recently: the scheduler's lag (an event loop kept busy shows here). */
  private readonly lags: { at: number; ms: number }[] = [];
  private readonly now: () => number;
  private readonly timers: Timers;
  private readonly onError: (job: string, error: unknown) => void;

  constructor(options: SchedulerOptions = {}) {
    this.now = options.now ?? Date.now;
    this.timers = options.timers ?? backgroundTimers;
    this.onError = options.onError ?? (() => {});
  }

  /** Jobs registered and not stopped. */
  get size(): number {
    return this.entries.size;
  }

  /** Whether a wake-up is armed (one timer at most, whatever the number of jobs). */
  get armed(): boolean {
    return this.timer !== null;
  }

  /** Run `fn` every `everyMs`, first after one period. */
  // `unknown` in the return type lets a job be any function; only `false` means "stop".
  every(name: string, everyMs: number, fn: () => unknown): Job {
    if (!Number.isFinite(everyMs) || everyMs <= 0)
      throw new RangeError(`job ${name}: period must be positive`);
    return this.add({ name, everyMs, due: this.now() + everyMs, fn, running: false, cancelled: false });
  }

  /**
   * Run `fn` once at `dueAt` (a clock time), on the same timer as everything else: how a job that
   * knows its next moment (cron's next occurrence) wakes exactly then instead of polling.
   */
  // `unknown` in the return type lets any function be given; the result is not used.
  at(name: string, dueAt: number, fn: () => unknown): Job {
    if (!Number.isFinite(dueAt)) throw new RangeError(`job ${name}: the time to run is not a number`);
    return this.add({ name, everyMs: 0, due: dueAt, fn, running: false, cancelled: false });
  }

  private add(entry: Entry): Job {
    if (this.stopped) throw new Error(`job ${entry.name}: the scheduler is stopped`);
    this.entries.add(entry);
    this.arm();
    return {
      name: entry.name,
      cancel: () => {
        entry.cancelled = true;
        this.entries.delete(entry);
        this.arm();
      },
    };
  }

  /** Cancel every job and the timer. */
  stop(): void {
    this.stopped = true;
    for (const entry of this.entries) entry.cancelled = true;
    this.entries.clear();
    this.disarm();
  }

  private arm(): void {
    let soonest = Number.POSITIVE_INFINITY;
    for (const entry of this.entries) if (!entry.running && entry.due < soonest) soonest = entry.due;
    if (soonest === Number.POSITIVE_INFINITY) {
      this.disarm();
      return;
    }
    // A timer armed for as soon or sooner stays: waking early finds nothing due and arms again,
    // which costs less than clearing and setting a timer each time a turn adds and cancels its
    // heartbeat (twice a turn).
    if (this.timer !== null && this.timerDue <= soonest) return;
    this.disarm();
    this.timerDue = soonest;
    // Background bookkeeping never keeps a finished process alive: the default timers are unref'd.
    // Armed outside any trace: a timer armed during a turn would run every later job in its span.
    const delay = Math.max(0, soonest - this.now());
    this.timer = outsideSpans(() => this.timers.set(() => this.tick(), delay));
  }

  private disarm(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
    this.timerDue = Number.POSITIVE_INFINITY;
  }

  /** The last wake-up's lateness and the worst of the last minute, in ms. */
  lag(): { last_ms: number; max_ms: number; jobs: number } {
    const since = this.now() - 60_000;
    while (this.lags.length > 0 && (this.lags[0]?.at ?? 0) < since) this.lags.shift();
    return {
      last_ms: this.lags.at(-1)?.ms ?? 0,
      max_ms: this.lags.reduce((m, l) => Math.max(m, l.ms), 0),
      jobs: this.entries.size,
    };
  }

  private tick(): void {
    const now = this.now();
    if (Number.isFinite(this.timerDue)) {
      this.lags.push({ at: now, ms: Math.max(0, now - this.timerDue) });
      if (this.lags.length > 600) this.lags.shift();
    }
    this.timer = null;
    this.timerDue = Number.POSITIVE_INFINITY;
    for (const entry of [...this.entries]) {
      if (entry.running || entry.due > now) continue;
      void this.run(entry);
    }
    this.arm();
  }

  private async run(entry: Entry): Promise<void> {
    entry.running = true;
    let again = true;
    try {
      again = (await entry.fn()) !== false;
    } catch (error) {
      this.onError(entry.name, error);
    } finally {
      entry.running = false;
    }
    // everyMs 0: a one-shot from at().
    if (!again || entry.cancelled || entry.everyMs === 0) {
      this.entries.delete(entry);
    } else {
      // The next run is a period after this one ended, so a slow job never piles up behind itself.
      entry.due = this.now() + entry.everyMs;
    }
    this.arm();
  }
}
