// Time that only moves when a sleep says so: sleeps return at once, advance the clock by their
// length and are recorded, so retry and cooldown logic runs exactly and instantly in tests.
import { type Deps, seededRandom } from "../../src/core/deps.js";

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
