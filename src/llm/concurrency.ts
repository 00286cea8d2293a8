// A provider's max_concurrency: at most `max` calls hold a slot at once, the rest wait in a fair
// (first come, first served) queue that any waiter can leave at once by aborting.

interface Waiter {
  grant: (release: () => void) => void;
}

export class ConcurrencyLimiter {
  private holders = 0;
  // A Set keeps insertion order (FIFO) and lets an aborted waiter leave in O(1).
  private readonly queue = new Set<Waiter>();

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`max_concurrency must be a whole number of at least 1, got ${max}`);
    }
  }

  /** Calls holding a slot now. */
  get inFlight(): number {
    return this.holders;
  }

  /** Calls queued for a slot now. */
  get waiting(): number {
    return this.queue.size;
  }

  /**
   * Wait for a slot; resolves with the function that gives it back (calling it again does
   * nothing). Rejects with the signal's reason when aborted while waiting, leaving the queue.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    // Only take a free slot directly when nobody is queued, so a newcomer never jumps the line.
    if (this.holders < this.max && this.queue.size === 0) {
      this.holders++;
      return Promise.resolve(this.releaser());
    }
    return new Promise<() => void>((resolve, reject) => {
      const onAbort = () => {
        this.queue.delete(waiter);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
      };
      this.queue.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Run fn while holding a slot; the slot is given back however fn ends. */
  async run<T>(fn: () => Promise<T> | T, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(signal);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.handOff();
    };
  }

  /** A freed slot passes straight to the oldest waiter, so the count never dips and refills. */
  private handOff(): void {
    const next = this.queue.values().next();
    if (next.done) {
      this.holders--;
      return;
    }
    this.queue.delete(next.value);
    next.value.grant(this.releaser());
  }
}
