// A check run in the background under a deadline, its last result always at hand: what /health
// answers from, so a request never waits on a slow or hung look at a layer.
import { formatDuration } from "./status.js";

export interface ProbeState<T> {
  value: T | null;
  error: string | null;
  checked_at: number | null;
  /** Set while a probe runs; a probe past its deadline is stopped and reported hung. */
  running_since: number | null;
}

/** A check run in the background under a deadline; its last result is always at hand. */
export class BackgroundProbe<T> {
  readonly state: ProbeState<T> = { value: null, error: null, checked_at: null, running_since: null };

  constructor(
    private readonly run: (signal: AbortSignal) => Promise<T>,
    private readonly timeoutMs: number,
    private readonly now: () => number,
  ) {}

  /** Run the check now (`run` instead of the usual one, for a first look done differently). */
  async once(run: (signal: AbortSignal) => Promise<T> = this.run): Promise<void> {
    if (this.state.running_since !== null) return;
    const started = this.now();
    this.state.running_since = started;
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`no answer within ${formatDuration(this.timeoutMs)}`)),
      this.timeoutMs,
    );
    timer.unref();
    try {
      const value = await Promise.race([
        run(controller.signal),
        new Promise<never>((_, reject) =>
          controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
        ),
      ]);
      this.state.value = value;
      this.state.error = null;
    } catch (error) {
      this.state.error = error instanceof Error ? error.message : String(error);
    } finally {
      clearTimeout(timer);
      this.state.checked_at = this.now();
      this.state.running_since = null;
    }
  }
}
