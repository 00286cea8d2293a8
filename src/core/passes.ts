// One pass of some work at a time, however often it is asked for: a kick while a pass runs asks
// for exactly one more after it (what the kick wanted done may have been read too early by the
// running one). The outboxes deliver this way after each enqueue.

export class Passes {
  private running: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly pass: () => Promise<unknown>,
    /** True once no pass may start any more. */
    private readonly stopped: () => boolean,
  ) {}

  /** Run a pass now, or one more after the running one. Resolves when the passes end; never rejects. */
  kick(): Promise<void> {
    if (this.stopped()) return Promise.resolve();
    if (this.running !== null) {
      this.again = true;
      return this.running;
    }
    const passes = async () => {
      do {
        this.again = false;
        await this.pass().catch(() => undefined);
      } while (this.again && !this.stopped());
    };
    this.running = passes().finally(() => {
      this.running = null;
    });
    return this.running;
  }
}
