// getUpdates' long poll: a call with a timeout is held until an update it may take is queued or the
// timeout passes, then answered with what is there. One poll is held at a time, as Telegram does:
// a newer getUpdates ends the held one with 409 "terminated by other getUpdates request", and a
// webhook set while a poll is held ends it with the webhook 409. close() answers held polls with
// no updates.
import type { HttpError } from "../../../http/http-error.js";
import type { TelegramSimState } from "./state.js";

interface Held {
  /** End the poll with an error, or with what is queued when error is null. */
  end(error: HttpError | null): void;
}

export class LongPolls {
  private held: Held | null = null;
  private closed = false;

  constructor(private readonly state: TelegramSimState) {}

  /** End the poll being held, if one is, with this error. */
  terminate(error: HttpError): void {
    const held = this.held;
    this.held = null;
    held?.end(error);
  }

  /**
   * Answer with `take()` at once when it has updates or timeout is 0; otherwise hold until it
   * has some, the timeout passes, the client goes away, or close().
   */
  hold<T>(take: () => T[], timeoutSeconds: number, clientGone: AbortSignal): Promise<T[]> {
    const now = take();
    if (now.length > 0 || timeoutSeconds <= 0 || this.closed || clientGone.aborted)
      return Promise.resolve(now);
    return new Promise<T[]>((resolve, reject) => {
      const state = this.state;
      let done = false;
      const finish = (error: HttpError | null) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        stop();
        clientGone.removeEventListener("abort", gone);
        if (this.held === held) this.held = null;
        state.pollsHeld -= 1;
        state.changed();
        if (error) reject(error);
        else resolve(take());
      };
      const held: Held = { end: finish };
      const gone = () => finish(null);
      const timer = setTimeout(() => finish(null), timeoutSeconds * 1000);
      const stop = state.onChange(() => {
        if (take().length > 0) finish(null);
      });
      clientGone.addEventListener("abort", gone, { once: true });
      this.held = held;
      state.pollsHeld += 1;
      state.changed();
    });
  }

  /** Answer every held poll now, and every later one at once. */
  close(): void {
    this.closed = true;
    const held = this.held;
    this.held = null;
    held?.end(null);
  }
}
