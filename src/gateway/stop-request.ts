// How a gateway process is asked to stop: the first SIGTERM/SIGINT (or the end of `tenax up`) asks
// for a drain, and every signal after it asks to cut the drain short. The signals are listened for
// from before the pid file exists until the process is done, so no signal at any moment of the
// start or the stop kills it by the default action (a pid file left behind, turns not saved).

export class StopRequest {
  private readonly first = new AbortController();
  private readonly second = new AbortController();
  private why: string | null = null;
  private onHurry: (signal: NodeJS.Signals) => void = () => undefined;
  /** Resolves with why once a stop is asked for. */
  readonly requested: Promise<string>;
  private resolve: (why: string) => void = () => undefined;

  constructor() {
    this.requested = new Promise((resolve) => {
      this.resolve = resolve;
    });
  }

  /** Aborted once a stop is asked for: the start does nothing new after it. */
  get signal(): AbortSignal {
    return this.first.signal;
  }

  /** Aborted by a second stop signal: the drain is cut short. */
  get hurried(): AbortSignal {
    return this.second.signal;
  }

  /** Why the stop was asked for (the signal's name), or null while none was. */
  get reason(): string | null {
    return this.why;
  }

  /** Ask for the stop (the first time only; later calls keep the first reason). */
  request(why: string): void {
    if (this.why !== null) return;
    this.why = why;
    this.first.abort(new Error(why));
    this.resolve(why);
  }

  /** Where a signal after the first is reported (before the drain is cut). */
  whenHurried(report: (signal: NodeJS.Signals) => void): void {
    this.onHurry = report;
  }

  /** Listen for SIGTERM and SIGINT (and `stopWhen`); returns the function that stops listening. */
  listen(stopWhen?: Promise<string>): () => void {
    const onSignal = (signal: NodeJS.Signals) => {
      if (this.why === null) {
        this.request(signal);
        return;
      }
      this.onHurry(signal);
      this.second.abort(new Error(`${signal} again`));
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
    void stopWhen?.then((why) => this.request(why));
    return () => {
      process.off("SIGTERM", onSignal);
      process.off("SIGINT", onSignal);
    };
  }
}
