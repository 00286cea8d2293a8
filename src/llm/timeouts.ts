// The four deadlines of one provider call and the timers that enforce three of them (connect is the
// connection pool's): they abort a signal of our own and remember which one fired, so the failure is
// classified as a timeout or a stream drop, never as the caller's abort.

export interface Timeouts {
  /**
   * Opening the connection (TCP and TLS handshake). Enforced by the connection pool of the default
   * fetch (providers/default-fetch.ts), not by these timers, and to within about a second; an
   * injected fetch brings its own. Also bounded by `first_byte_ms`, whose clock starts first.
   */
  connect_ms: number;
  /** From sending the request until the response headers arrive. */
  first_byte_ms: number;
  /** The longest silence allowed between two pieces of a streamed body. */
  idle_ms: number;
  /** The whole request, headers and body. */
  total_ms: number;
}

export const DEFAULT_TIMEOUTS: Readonly<Timeouts> = {
  connect_ms: 10_000,
  first_byte_ms: 60_000,
  idle_ms: 60_000,
  total_ms: 600_000,
};

export type TimerName = "first_byte" | "idle" | "total";

/** The timer seam: production uses setTimeout, tests may pass their own. */
export interface TimerDeps {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: TimerDeps = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface RequestTimers {
  /** Aborted when a deadline passes or `release()` is called. */
  readonly signal: AbortSignal;
  /** The deadline that fired first, or null. */
  fired(): TimerName | null;
  /** The limit of a deadline, for messages. */
  limit(name: TimerName): number;
  /** The response headers arrived: the first-byte deadline is met and the idle one starts. */
  headers(): void;
  /** A piece of the body arrived: the idle deadline starts again. */
  activity(): void;
  /**
   * Stop every timer without aborting: for a request that is over (its body read to the end).
   * Safe to call more than once.
   */
  clear(): void;
  /**
   * Stop every timer and abort the signal, for a reason that is not a deadline (the consumer went
   * away, or the call failed): the request and its socket must not outlive the call.
   */
  release(): void;
}

/** Reject nonsense early: every limit is a positive whole number of milliseconds. */
export function checkTimeouts(timeouts: Timeouts): Timeouts {
  for (const [key, value] of Object.entries(timeouts)) {
    if (!Number.isInteger(value) || value <= 0) {
      throw new RangeError(`timeouts.${key} must be a positive whole number of milliseconds, got ${value}`);
    }
  }
  return timeouts;
}

export function startRequestTimers(timeouts: Timeouts, timers: TimerDeps = realTimers): RequestTimers {
  const controller = new AbortController();
  let fired: TimerName | null = null;
  let cleared = false;
  let firstByte: unknown = null;
  let idle: unknown = null;
  let total: unknown = null;

  const fire = (name: TimerName) => () => {
    if (cleared || fired !== null) return;
    fired = name;
    clear();
    controller.abort(new DOMException(`${name} timeout after ${timeouts[`${name}_ms`]} ms`, "TimeoutError"));
  };
  const stop = (handle: unknown): null => {
    if (handle !== null) timers.clear(handle);
    return null;
  };
  function clear(): void {
    cleared = true;
    firstByte = stop(firstByte);
    idle = stop(idle);
    total = stop(total);
  }

  total = timers.set(fire("total"), timeouts.total_ms);
  firstByte = timers.set(fire("first_byte"), timeouts.first_byte_ms);

  return {
    signal: controller.signal,
    fired: () => fired,
    limit: (name) => timeouts[`${name}_ms`],
    headers() {
      if (cleared) return;
      firstByte = stop(firstByte);
      idle = stop(idle);
      idle = timers.set(fire("idle"), timeouts.idle_ms);
    },
    activity() {
      if (cleared || idle === null) return;
      idle = stop(idle);
      idle = timers.set(fire("idle"), timeouts.idle_ms);
    },
    clear,
    release() {
      clear();
      if (!controller.signal.aborted) controller.abort(new DOMException("released", "AbortError"));
    },
  };
}
