// The turns waiting for a busy session, in arrival order, at most `bound` per session. A waiter
// leaves at once when its signal aborts (the client hung up), so the ones behind it move up and
// keep their order; `startNext` hands the session to the first waiter when its turn ends.

interface Waiter<T> {
  begin: () => T;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
  /** Removes the abort listener once the waiter leaves the queue by any way. */
  detach: () => void;
}

export type Enqueued<T> = { queued: true; position: number; started: Promise<T> } | { queued: false };

export class SessionQueue<T> {
  private readonly lanes = new Map<string, Waiter<T>[]>();

  /** `bound`: waiters per session (0 queues nothing). */
  constructor(private readonly bound: number) {}

  /** How many wait for this session. */
  waiting(sessionId: string): number {
    return this.lanes.get(sessionId)?.length ?? 0;
  }

  /** How many wait, over all sessions. */
  get size(): number {
    let n = 0;
    for (const lane of this.lanes.values()) n += lane.length;
    return n;
  }

  /**
   * Wait behind the session's running turn: `started` settles with what `begin` returns when it
   * is this waiter's turn, or rejects with the signal's reason when it aborts first. `queued` is
   * false when the session's queue is full (nothing was queued).
   */
  enqueue(sessionId: string, begin: () => T, signal?: AbortSignal): Enqueued<T> {
    const lane = this.lanes.get(sessionId) ?? [];
    if (lane.length >= this.bound) return { queued: false };
    if (signal?.aborted) return { queued: true, position: 0, started: Promise.reject(signal.reason) };
    let waiter!: Waiter<T>;
    const started = new Promise<T>((resolve, reject) => {
      waiter = { begin, resolve, reject, detach: () => {} };
    });
    if (signal) {
      const onAbort = () => {
        this.remove(sessionId, waiter);
        waiter.reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      waiter.detach = () => signal.removeEventListener("abort", onAbort);
    }
    lane.push(waiter);
    this.lanes.set(sessionId, lane);
    // The caller may never look at a rejection (a client gone); it is not an unhandled one.
    started.catch(() => {});
    return { queued: true, position: lane.length, started };
  }

  /**
   * The session's turn ended: start its first waiter (its `begin` runs now, synchronously).
   * A waiter whose `begin` throws is rejected with that error and the next one is tried.
   * Returns whether a waiter was started.
   */
  startNext(sessionId: string): boolean {
    for (;;) {
      const lane = this.lanes.get(sessionId);
      const waiter = lane?.shift();
      if (lane?.length === 0) this.lanes.delete(sessionId);
      if (!waiter) return false;
      waiter.detach();
      try {
        waiter.resolve(waiter.begin());
        return true;
      } catch (error) {
        waiter.reject(error);
      }
    }
  }

  /** Reject every waiter with `error()` (each gets its own), emptying the queue. */
  rejectAll(error: () => unknown): number {
    const all = [...this.lanes.values()].flat();
    this.lanes.clear();
    for (const waiter of all) {
      waiter.detach();
      waiter.reject(error());
    }
    return all.length;
  }

  private remove(sessionId: string, waiter: Waiter<T>): void {
    const lane = this.lanes.get(sessionId);
    if (!lane) return;
    const at = lane.indexOf(waiter);
    if (at >= 0) lane.splice(at, 1);
    if (lane.length === 0) this.lanes.delete(sessionId);
  }
}
