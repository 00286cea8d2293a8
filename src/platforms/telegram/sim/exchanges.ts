// The Bot API calls being answered now: each one's response and record, so that close() can cut
// what still hangs, a hang fault can wait until released, and close() can wait for the long polls
// it answered to be written before it stops listening.
import type { ServerResponse } from "node:http";
import type { CallRecord } from "./types.js";

export interface Exchange {
  res: ServerResponse;
  record: CallRecord;
  /** Aborted when the response closes, for whatever reason. */
  closed: AbortSignal;
}

export class Exchanges {
  private readonly open = new Set<Exchange>();
  private hangs = new Set<() => void>();
  private idleWaiters: (() => void)[] = [];

  opened(exchange: Exchange): void {
    this.open.add(exchange);
  }

  settled(exchange: Exchange): void {
    this.open.delete(exchange);
    if (this.open.size > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /** Resolves once no call is being answered, or after `ms`. */
  idle(ms: number): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Wait until releaseHangs() or the call's response closes; true when released. */
  hang(closed: AbortSignal): Promise<boolean> {
    if (closed.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const release = () => {
        closed.removeEventListener("abort", gone);
        resolve(true);
      };
      const gone = () => {
        this.hangs.delete(release);
        resolve(false);
      };
      this.hangs.add(release);
      closed.addEventListener("abort", gone, { once: true });
    });
  }

  /** Let every hanging call go on; how many there were. */
  releaseHangs(): number {
    const hangs = this.hangs;
    this.hangs = new Set();
    for (const release of hangs) release();
    return hangs.size;
  }

  /** Cut every call still open, recorded as server_closed. */
  cutOpen(): void {
    for (const exchange of this.open) {
      if (exchange.record.ended === "open") exchange.record.ended = "server_closed";
      exchange.res.destroy();
    }
  }
}
