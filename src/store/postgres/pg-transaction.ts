// One transaction on the pool, run again from the start when PostgreSQL chose it as the victim of
// a serialization failure (40001) or a deadlock (40P01), after a short jittered backoff. A pooled
// connection found dead (the server restarted since it was last used) is replaced once, at once.
// A connection lost while COMMIT was on its way is reported as such: the outcome is unknown.
import type pg from "pg";
import type { Deps } from "../../core/deps.js";
import { classifyPgError } from "./pg-connection.js";

/** The reply to COMMIT never came: the transaction may or may not have been committed. */
export class CommitOutcomeUnknown extends Error {
  override readonly name = "CommitOutcomeUnknown";
  constructor(readonly original: unknown) {
    super(`the connection was lost while the commit was sent: ${(original as Error)?.message ?? original}`);
  }
}

export interface TransactionOptions {
  deps: Pick<Deps, "sleep" | "random">;
  /** Attempts in all when PostgreSQL keeps choosing this transaction as the victim (default 8). */
  maxAttempts?: number;
  onRetry?: (attempt: number, code: string, nextInMs: number) => void;
}

/** Backoff before attempt `attempt + 1`: doubling from 10 ms to at most 500 ms, half of it random. */
export function retryDelay(attempt: number, random: () => number): number {
  const ceiling = Math.min(500, 10 * 2 ** attempt);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

type AttemptOutcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown; retry: "backoff" | "now" | "no" };

async function attempt<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  replacedDead: boolean,
): Promise<AttemptOutcome<T>> {
  const client = await pool.connect();
  let committing = false;
  try {
    await client.query("BEGIN");
    const value = await work(client);
    committing = true;
    await client.query("COMMIT");
    client.release();
    return { ok: true, value };
  } catch (error) {
    const kind = classifyPgError(error);
    if (kind === "unavailable") {
      client.release(error as Error);
      if (committing) return { ok: false, error: new CommitOutcomeUnknown(error), retry: "no" };
      return { ok: false, error, retry: replacedDead ? "no" : "now" };
    }
    // A connection that cannot even roll back is handed back broken: the pool destroys it.
    const broken = await client.query("ROLLBACK").then(
      () => undefined,
      (rollbackError: unknown) => rollbackError as Error,
    );
    client.release(broken);
    return { ok: false, error, retry: kind === "retry" ? "backoff" : "no" };
  }
}

/** Run `work` in one READ COMMITTED transaction; resolves once it is committed. */
export async function inTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
  options: TransactionOptions,
): Promise<T> {
  const maxAttempts = options.maxAttempts ?? 8;
  let replacedDead = false;
  for (let n = 1; ; n++) {
    const outcome = await attempt(pool, work, replacedDead);
    if (outcome.ok) return outcome.value;
    if (outcome.retry === "no" || n >= maxAttempts) throw outcome.error;
    if (outcome.retry === "now") {
      replacedDead = true;
      continue;
    }
    const delay = retryDelay(n, options.deps.random);
    options.onRetry?.(n, String((outcome.error as { code?: unknown }).code), delay);
    await options.deps.sleep(delay);
  }
}
