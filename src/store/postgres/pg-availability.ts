// Whether the PostgreSQL database answers, as last seen: set by the first failure to reach it,
// cleared by the first statement that succeeds after. health() reads this synchronously. While it
// is down a background ping (unref'd, never keeping a process alive) notices the return even when
// nothing is being written, so health clears by itself.
import type { Clock, Timers } from "../../core/deps.js";
import type { StoreEvent, StoreHealth } from "../store-types.js";

export class Availability {
  private state: StoreHealth["unavailable"] = null;
  private timer: unknown = null;
  private stopped = false;

  constructor(
    private readonly where: string,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly emit: (event: StoreEvent) => void,
    private readonly ping: () => Promise<unknown>,
    private readonly pingEveryMs: number,
  ) {}

  get unavailable(): StoreHealth["unavailable"] {
    return this.state;
  }

  /** The database could not be reached: note since when, tell listeners once, start pinging. */
  down(detail: string): void {
    if (this.state !== null || this.stopped) return;
    this.state = { detail, since: this.clock.now() };
    this.emit({ type: "store.unavailable", path: this.where, detail });
    this.schedulePing();
  }

  /** A statement succeeded: the database is back (if it was away). */
  up(): void {
    if (this.state === null) return;
    const downMs = Math.max(0, this.clock.now() - this.state.since);
    this.state = null;
    this.clearPing();
    this.emit({ type: "store.available", path: this.where, down_ms: downMs });
  }

  stop(): void {
    this.stopped = true;
    this.clearPing();
  }

  private schedulePing(): void {
    if (this.stopped || this.pingEveryMs <= 0) return;
    this.timer = this.timers.set(() => {
      this.timer = null;
      // The ping's own success or failure calls up() or down() through the store's query path.
      void this.ping()
        .catch(() => undefined)
        .finally(() => {
          if (this.state !== null) this.schedulePing();
        });
    }, this.pingEveryMs);
  }

  private clearPing(): void {
    if (this.timer !== null) this.timers.clear(this.timer);
    this.timer = null;
  }
}
