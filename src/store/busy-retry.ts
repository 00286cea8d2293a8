// Retrying what another process's write lock held up: exponential backoff with jitter (so that
// competing processes do not retry in step), asleep between attempts, within a time budget.
import type { Deps } from "../core/deps.js";
import { classifySqliteError, StoreBusyError } from "./errors.js";

export interface BusyRetryOptions {
  budgetMs: number;
  deps: Deps;
  /** What is being done, for the error: "write to /path/state.db". */
  what: string;
  onRetry?: (attempt: number, waitedMs: number, nextInMs: number) => void;
}

export async function retryWhileBusy<T>(fn: () => T, options: BusyRetryOptions): Promise<T> {
  const started = options.deps.clock.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return fn();
    } catch (error) {
      if (classifySqliteError(error) !== "busy") throw error;
      const waited = options.deps.clock.now() - started;
      if (waited >= options.budgetMs) {
        throw new StoreBusyError(
          "store_busy",
          `could not ${options.what}: another process held the store's write lock for ${waited} ms`,
          {
            cause: error,
            hint: "another Tenax process is holding a long write transaction; look for a stuck one with: ps aux | grep tenax",
          },
        );
      }
      const nextIn = Math.round(Math.min(1000, 5 * 2 ** attempt) * (0.5 + options.deps.random()));
      options.onRetry?.(attempt, waited, nextIn);
      await options.deps.sleep(nextIn);
    }
  }
}
