// When `tenax up` starts the gateway again after it exits, as data: a clean exit (0, after a drain)
// is no crash and is followed at once; a config or usage error (78, 2) is never restarted, since it
// would fail the same way; any other exit waits 1 s, 2 s, 4 s ... (capped), and the Nth unclean exit within
// the window (3 within 5 minutes by default) ends the restarts: a crash loop.
import { isConfigErrorExit } from "../../gateway/service/exit-codes.js";

export interface RestartPolicyOptions {
  /** This many unclean exits within `windowMs` make up give up. */
  maxUnclean: number;
  windowMs: number;
  /** The wait after the first unclean exit in the window; it doubles with each one, up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RESTART_POLICY: RestartPolicyOptions = {
  maxUnclean: 3,
  windowMs: 5 * 60_000,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
};

export interface Exit {
  code: number | null;
  signal: string | null;
}

export type ExitDecision =
  | { action: "restart"; delayMs: number; clean: boolean; unclean: number }
  | { action: "give_up"; reason: "crash_loop" | "config_error"; unclean: number };

export function isCleanExit(exit: Exit): boolean {
  return exit.signal === null && exit.code === 0;
}

export class RestartPolicy {
  private unclean: number[] = [];

  constructor(readonly options: RestartPolicyOptions = DEFAULT_RESTART_POLICY) {}

  /** What follows an exit at `now` (ms); an unclean one is counted. */
  decide(exit: Exit, now: number): ExitDecision {
    if (isCleanExit(exit)) return { action: "restart", delayMs: 0, clean: true, unclean: this.count(now) };
    if (exit.signal === null && isConfigErrorExit(exit.code))
      return { action: "give_up", reason: "config_error", unclean: this.count(now) };
    this.unclean.push(now);
    const unclean = this.count(now);
    if (unclean >= this.options.maxUnclean) return { action: "give_up", reason: "crash_loop", unclean };
    const delayMs = Math.min(this.options.baseDelayMs * 2 ** (unclean - 1), this.options.maxDelayMs);
    return { action: "restart", delayMs, clean: false, unclean };
  }

  /** Unclean exits within the window ending at `now`. */
  count(now: number): number {
    this.unclean = this.unclean.filter((at) => now - at < this.options.windowMs);
    return this.unclean.length;
  }

  /** Forget the past exits: the operator asked for the gateway again. */
  reset(): void {
    this.unclean = [];
  }
}
