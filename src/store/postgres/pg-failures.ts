// What the PostgreSQL store says when it cannot take a write or answer a read: the database is
// unreachable (store_unavailable), or the connection was lost while a commit was on its way
// (store_commit_unknown). A refused write is first appended to the spool (fsynced), so nothing a
// caller was promised is lost; each error names the database without its password and says what
// to do.
import type { Clock } from "../../core/deps.js";
import { StoreBusyError, StoreError } from "../errors.js";
import type { WriteOp } from "../ops.js";
import type { Spool } from "../spool.js";
import type { StoreEvent } from "../store-types.js";

/**
 * Retry-After for an unreachable database: the store pings it every second and takes writes again
 * the moment it answers, so a client retrying after two seconds finds it back if it is.
 */
const BACK_SOON_MS = 2_000;
/** A lost commit reply or a busy pool: the next attempt may well succeed at once. */
const RETRY_NOW_MS = 1_000;

export function describeError(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
}

export class PgFailures {
  /** Writes kept in the spool by this process. */
  spooledRecords = 0;

  constructor(
    private readonly where: string,
    private readonly spool: Spool,
    private readonly clock: Clock,
    private readonly emit: (event: StoreEvent) => void,
  ) {}

  /** A read the unreachable database could not answer. */
  unavailableRead(error: unknown): StoreError {
    return new StoreError(
      "store_unavailable",
      `the PostgreSQL database ${this.where} cannot be reached (${describeError(error)})`,
      { hint: this.hint(), data: { where: this.where }, cause: error, retryAfterMs: BACK_SOON_MS },
    );
  }

  /** A write refused because the database is unreachable: kept in the spool first. */
  unavailableWrite(ops: WriteOp[], error: unknown): StoreError {
    const spooled = this.keep(ops, "unavailable");
    return new StoreError(
      "store_unavailable",
      `the PostgreSQL database ${this.where} cannot be reached (${describeError(error)}): the write was not stored.${spooled.said}`,
      {
        hint: this.hint(),
        data: { where: this.where, spooled_to: spooled.file },
        cause: error,
        retryAfterMs: BACK_SOON_MS,
      },
    );
  }

  /** The connection dropped after COMMIT was sent: the write may or may not be stored. */
  commitUnknown(ops: WriteOp[], error: unknown): StoreError {
    const spooled = this.keep(ops, "commit_unknown");
    return new StoreError(
      "store_commit_unknown",
      `the connection to ${this.where} was lost while the write was being committed (${describeError(error)}): it may or may not be stored; safe to retry: the write is idempotent.${spooled.said}`,
      {
        hint: this.hint(),
        data: { where: this.where, spooled_to: spooled.file },
        cause: error,
        retryAfterMs: RETRY_NOW_MS,
      },
    );
  }

  /**
   * The server cancelled a statement past its time limit: the database answers but is overloaded,
   * or a lock is held for long. Nothing was stored, and nothing is spooled (it is not away).
   */
  statementTimeout(error: unknown): StoreError {
    return new StoreBusyError(
      "store_busy",
      `a statement on ${this.where} ran past its time limit and was cancelled (${describeError(error)}): it was not stored`,
      {
        hint: "retry it; if it recurs, see what the database is busy with or which lock is held (pg_stat_activity)",
        data: { where: this.where },
        cause: error,
        retryAfterMs: RETRY_NOW_MS,
      },
    );
  }

  /** Every connection of the pool stayed busy while this write or read waited for one. */
  poolBusy(error: unknown, max: number): StoreError {
    return new StoreBusyError(
      "store_busy",
      `all ${max} connections to ${this.where} stayed busy while this waited for one (${describeError(error)}): it was not stored`,
      {
        hint: "retry it; if it recurs, raise the pool size or see what holds the connections (pg_stat_activity)",
        data: { where: this.where },
        cause: error,
        retryAfterMs: RETRY_NOW_MS,
      },
    );
  }

  private hint(): string {
    return `start PostgreSQL at ${this.where} (or fix the network to it); writes resume by themselves once it answers, no restart needed, and writes refused meanwhile are kept in the spool (${this.spool.dir}): fold them in with tenax store replay`;
  }

  private keep(ops: WriteOp[], reason: string): { file: string | null; said: string } {
    try {
      const file = this.spool.append(ops, reason, this.clock.now());
      this.spooledRecords++;
      this.emit({ type: "store.spooled", path: this.where, file, reason, ops: ops.length });
      return {
        file,
        said: ` It was kept in the spool (${file}); once the database answers, tenax store replay folds it in.`,
      };
    } catch (error) {
      return { file: null, said: ` Keeping it in the spool failed too (${describeError(error)}).` };
    }
  }
}
