// The rate limit of the login routes: a client (by address) that fails this many times within a
// window is refused (429, with when to try again) until the window ends. Only failures count: a
// wake burst of good refreshes is never slowed, while guessing links or replaying tokens is. A
// token is 32 random bytes, so the limit is not what makes guessing hopeless; it keeps a scanner
// from filling the audit trail and the store with refusals.
//
// Behind a reverse proxy every request comes from the proxy's address; the client is then the
// last address of X-Forwarded-For, trusted only from a loopback peer (clientOf).
import { isLoopback } from "../../http/host-header.js";

export interface FailureLimitOptions {
  /** Failures allowed per window; the next one is refused. */
  max: number;
  windowMs: number;
  now: () => number;
  /** Clients tracked at once; the oldest window is forgotten first (bounded memory under a flood). */
  maxClients?: number;
}

interface Window {
  started: number;
  failures: number;
}

export class FailureLimit {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly options: FailureLimitOptions) {}

  /** Milliseconds until `client` may try again, or 0 when it may now. */
  retryAfterMs(client: string): number {
    const window = this.current(client);
    if (window === undefined || window.failures < this.options.max) return 0;
    return window.started + this.options.windowMs - this.options.now();
  }

  fail(client: string): void {
    const now = this.options.now();
    const window = this.current(client);
    if (window !== undefined) {
      window.failures++;
      return;
    }
    this.windows.set(client, { started: now, failures: 1 });
    const max = this.options.maxClients ?? 10_000;
    if (this.windows.size > max) {
      const oldest = this.windows.keys().next().value;
      if (oldest !== undefined) this.windows.delete(oldest);
    }
  }

  private current(client: string): Window | undefined {
    const window = this.windows.get(client);
    if (window === undefined) return undefined;
    if (this.options.now() - window.started < this.options.windowMs) return window;
    this.windows.delete(client);
    return undefined;
  }
}

/** Who a request is from: its peer, or behind a proxy on loopback the address the proxy names. */
export function clientOf(peer: string | undefined, forwardedFor: string | string[] | undefined): string {
  const address = (peer ?? "unknown").replace(/^::ffff:/, "");
  if (!isLoopback(address) || forwardedFor === undefined) return address;
  const list = (Array.isArray(forwardedFor) ? forwardedFor.join(",") : forwardedFor).split(",");
  const last = list[list.length - 1]?.trim();
  return last === undefined || last === "" ? address : last;
}
