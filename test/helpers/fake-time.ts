// Time that only moves when a test says so: sleeps return at once, advance the clock by their
// length and are recorded, so retry and cooldown logic runs exactly and instantly in tests; and
// timers that fire only as the test advances the clock (a Scheduler's, for minutes in a moment).
import { type Deps, seededRandom, type Timers } from "../../src/core/deps.js";

export const FAKE_START = 1_700_000_000_000;

export interface FakeDeps extends Deps {
  /** Every sleep's length, in order. */
  delays: number[];
  log: string[];
  /** Move the clock forward without a sleep. */
  advance(ms: number): void;
}

export function fakeDeps(seed = 1, start = FAKE_START): FakeDeps {
  let now = start;
  const delays: number[] = [];
  const log: string[] = [];
  return {
    delays,
    log,
    advance: (ms) => {
      now += ms;
    },
    clock: { now: () => now },
    random: seededRandom(seed),
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason;
      log.push(`sleep ${ms}`);
      delays.push(ms);
      now += ms;
    },
  };
}

export interface FakeTimers {
  /** The clock's first reading. */
  start: number;
  now: () => number;
  timers: Timers;
  /** Timers armed and not yet fired or cleared. */
  readonly pending: number;
  /** Move the clock forward by `ms`, firing each timer that falls due on the way, in order. */
  advance(ms: number): void;
}

/** A clock and timers that move only when `advance` says so (for a Scheduler on fake time). */
export function fakeTimers(start = FAKE_START): FakeTimers {
  let now = start;
  let seq = 0;
  const armed = new Map<number, { due: number; fn: () => void }>();
  const nextDue = () => {
    let best: [number, { due: number; fn: () => void }] | null = null;
    for (const entry of armed) if (best === null || entry[1].due < best[1].due) best = entry;
    return best;
  };
  return {
    start,
    now: () => now,
    timers: {
      set: (fn, ms) => {
        armed.set(++seq, { due: now + Math.max(0, ms), fn });
        return seq;
      },
      clear: (handle) => {
        armed.delete(handle as number);
      },
    },
    get pending() {
      return armed.size;
    },
    advance: (ms) => {
      const until = now + ms;
      for (let next = nextDue(); next !== null && next[1].due <= until; next = nextDue()) {
        armed.delete(next[0]);
        now = Math.max(now, next[1].due);
        next[1].fn();
      }
      now = until;
    },
  };
}
