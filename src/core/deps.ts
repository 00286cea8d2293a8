// The seams that make time and chance testable: every cooldown, backoff, lease and retry takes these
// instead of calling Date.now(), Math.random() or setTimeout directly.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export type Random = () => number;

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

export interface Deps {
  clock: Clock;
  random: Random;
  sleep: Sleep;
}

export const systemClock: Clock = { now: () => Date.now() };

/** An abortable sleep; rejects with the signal's reason when aborted. */
export const realSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

export const defaultDeps: Deps = { clock: systemClock, random: Math.random, sleep: realSleep };

/** A deterministic random source (mulberry32) for seeded tests and jitter in simulations. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A one-shot timer, as setTimeout and clearTimeout give it: what a scheduler arms, passed in so a
 * test can run it on fake time (test/helpers/fake-time.ts). Background timers never keep a
 * finished process alive, so the real ones are unref'd.
 */
export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const backgroundTimers: Timers = {
  set: (fn, ms) => setTimeout(fn, ms).unref(),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
