// The SQLite store's write path: how a write becomes a commit and is acknowledged. Store (store.ts)
// owns the connection, its reads and its lifecycle; every write it is asked for comes here.
//
// What it promises:
// - Every write is redacted of the profile's secrets before anything keeps it (state.db, its WAL,
//   search.db, the spool).
// - Group commit (group-commit.ts): writes made while the event loop is busy are committed at its
//   next turn, in call order, in one IMMEDIATE transaction, one group at a time; each write is a
//   savepoint of its own, so a write that fails by itself (an unknown session) is refused alone,
//   while a failure of the commit (damage, a full disk, an I/O error) fails every write of the
//   group, each with the error a lone write gets. Another process's write lock is waited out
//   asleep, with backoff, up to the retry budget (busy-retry.ts).
// - A write is acknowledged (resolves) only once it is committed and, with synchronous: full, its
//   group's WAL is synced (wal-sync.ts), off the event loop. A write made `durableWithNext` is
//   acknowledged once committed, and is durable with the next synced commit; a group of only such
//   writes asks for no sync. `writeStaged` also says when a write is committed and readable, before
//   it is durable.
// - At every acknowledgement nothing written to the WAL before it is unsynced: the connection's
//   other commits (the search queue, the key ledger, the instance rows) call `ownCommit`, and a
//   sync running meanwhile is followed by another before its waiters are answered.
// - A failed sync is final for this process: the group is refused, `diskFailure` is set, and every
//   later write is refused and spooled (store-failures.ts), never acknowledged.
// - Once the store is damaged (the host's `damaged()`), every write is refused and spooled; damage
//   a commit meets is reported to the host (`markCorrupt`), which stops the connection.
//
// Its invariants: the page cache is dropped before a commit whenever the file may have changed
// under this process (page-reread.ts), so a write reads the pages it touches from the file and
// damage is caught by the write; the search queue is scheduled after every commit; the WAL file is
// closed only once no sync uses it (`close`), after what still waits is committed (`drain`).
import type Database from "better-sqlite3";
import type { Deps } from "../core/deps.js";
import { retryWhileBusy } from "./busy-retry.js";
import { classifySqliteError, StoreError } from "./errors.js";
import { applyGroup, GroupCommit, type QueuedWrite, type WriteOutcome } from "./group-commit.js";
import { type ApplyOptions, OpApplier, type OpResult, type WriteOp } from "./ops.js";
import { PageReread } from "./page-reread.js";
import type { StagedWrite } from "./store-domain.js";
import type { StoreFailures } from "./store-failures.js";
import type { StoreEvent, StoreHealth, StoreOptions } from "./store-types.js";
import { WalSync } from "./wal-sync.js";

/** What the write path needs of the store that holds the connection. */
export interface WritePathHost {
  /** The writing connection; null once closed or damaged. */
  connection(): Database.Database | null;
  /** The store's damage, once found (sticky). */
  damaged(): StoreHealth["corrupt"];
  /** A commit met damage: stop writing through the connection for good. */
  markCorrupt(detail: string): void;
  /** A group committed (the search queue's cue). */
  afterCommit(): void;
  /** The write's promise, telling the store's listeners of fenced writes and takeovers. */
  fence<T>(written: Promise<T>, ops: readonly WriteOp[]): Promise<T>;
  emit(event: StoreEvent): void;
}

export class WritePath {
  private readonly applier: OpApplier;
  private readonly dropCache: Database.Statement;
  /** A group's commit: one IMMEDIATE transaction, each write a savepoint (made once, not per commit). */
  private readonly commitTransaction: Database.Transaction<(group: readonly QueuedWrite[]) => WriteOutcome[]>;
  /** When a commit reads its pages from the file again (page-reread.ts). */
  private readonly reread: PageReread;
  /** Syncs the WAL before a group is acknowledged (synchronous: full); null when not durable. */
  private readonly walSync: WalSync | null;
  private failedDisk: StoreHealth["disk_failure"] = null;
  private readonly group: GroupCommit;

  constructor(
    db: Database.Database,
    private readonly options: StoreOptions,
    private readonly deps: Deps,
    private readonly failures: StoreFailures,
    private readonly host: WritePathHost,
  ) {
    this.applier = new OpApplier(db);
    this.walSync = syncsOffLoop(options) ? new WalSync(`${options.path}-wal`, options.walFiles) : null;
    this.dropCache = db.prepare("PRAGMA shrink_memory");
    const apply = (w: QueuedWrite) => this.applier.applyAll(w.ops, w.options);
    const inSavepoint = db.transaction(apply);
    this.commitTransaction = db.transaction((group: readonly QueuedWrite[]) =>
      applyGroup(group, apply, (w) => inSavepoint(w)),
    );
    this.reread = new PageReread(
      [options.path, `${options.path}-wal`],
      options.rereadPagesOnWrite ?? "changed",
      () => this.deps.clock.now(),
    );
    this.group = new GroupCommit({
      commit: async (group) => {
        // Damage found by an earlier group: these go to the spool, each with its own error.
        const corrupt = this.host.damaged();
        if (corrupt !== null)
          return group.map((w) => ({
            ok: false as const,
            error: this.failures.corrupt(w.ops, corrupt.detail),
          }));
        return retryWhileBusy(
          () => this.commitGroup(group),
          this.retryOptions(`write to ${this.options.path}`),
        );
      },
      commitNow: (group) => this.commitGroup(group),
      durable: () =>
        this.walSync?.sync().catch((error: unknown) => Promise.reject(this.syncFailed(error))) ?? DONE,
      durableNow: () => {
        try {
          this.walSync?.syncNow();
        } catch (error) {
          throw this.syncFailed(error);
        }
      },
      fail: (group, error) => this.settleFailedGroup(group, error),
    });
  }

  /** The sync that failed, final for this process (health's disk_failure); null while none has. */
  get diskFailure(): StoreHealth["disk_failure"] {
    return this.failedDisk;
  }

  /**
   * Apply operations in one transaction. Resolves once they are committed and durable (the
   * acknowledgement); see the top of this file.
   */
  write(written: WriteOp[], options: ApplyOptions = {}): Promise<OpResult[]> {
    const ops = this.redacted(written);
    const corrupt = this.host.damaged();
    if (corrupt !== null) return Promise.reject(this.failures.corrupt(ops, corrupt.detail));
    if (this.failedDisk !== null) return Promise.reject(this.failures.afterDiskFailure(ops, this.failedDisk));
    return this.host.fence(this.group.add(ops, options), ops);
  }

  /** The same, also saying when the write is committed and visible to reads, before it is durable. */
  writeStaged(written: WriteOp[], options: ApplyOptions = {}): StagedWrite {
    if (this.host.damaged() !== null || this.failedDisk !== null) {
      const refused = this.write(written, options);
      return { applied: refused, durable: refused };
    }
    const ops = this.redacted(written);
    const staged = this.group.addStaged(ops, options);
    const applied = this.host.fence(staged.applied, ops);
    // As addStaged's own: a caller waiting on durable alone leaves no refusal unhandled.
    applied.catch(() => {});
    return { applied, durable: staged.durable };
  }

  /** Resolves once every write committed so far is durable. */
  durableSoFar(): Promise<void> {
    // A damaged store has synced what it committed (WalSync.seal); a failed sync rejects.
    return this.group.durable();
  }

  /** A commit of the connection outside the groups (the search queue, the ledger, the registry). */
  ownCommit(): void {
    this.walSync?.touched();
    this.reread.ownCommit();
  }

  /** The store is damaged: what was committed is synced now, and answers every later sync. */
  seal(): void {
    this.walSync?.seal();
  }

  /** Writes still queued for a group commit are committed now (a caller that did not wait). */
  drain(): void {
    this.group.drainNow();
  }

  /** Close the WAL file once no sync uses it (after the connection is closed). */
  close(): void {
    this.walSync?.close();
  }

  /**
   * Every write passes here, so no secret is stored (state.db, its WAL, search.db, the spool):
   * messages, tool calls, turn errors and records, with the profile's secrets redacted.
   */
  private redacted(ops: WriteOp[]): WriteOp[] {
    const redactor = this.options.redactor;
    return redactor === undefined || redactor.size === 0 ? ops : redactor.redactDeep(ops);
  }

  /**
   * The WAL could not be synced: final for this process (see WalSync). Later writes go to the
   * spool, and health says the store is down until Tenax restarts.
   */
  private syncFailed(error: unknown): StoreError {
    const failure = this.failures.syncFailed(error);
    if (this.failedDisk === null) {
      this.failedDisk = { detail: failure.detail, since: this.deps.clock.now() };
      this.host.emit({ type: "store.disk_failed", path: this.options.path, detail: failure.detail });
    }
    return failure.error;
  }

  /** One IMMEDIATE transaction for the group. */
  private commitGroup(group: readonly QueuedWrite[]): WriteOutcome[] {
    if (this.host.connection() === null)
      throw new StoreError("store_closed", `the store ${this.options.path} is closed`);
    // Drop the cached pages first when the file may have changed under this process, so the write
    // reads every page it touches from the file and damage is caught by the write instead of
    // hiding behind a stale cache while new writes pile on (page-reread.ts says when).
    if (this.reread.beforeCommit()) this.dropCache.run();
    // With synchronous: full, the group is acknowledged once WalSync has synced the WAL.
    const outcomes = this.commitTransaction.immediate(group);
    this.reread.ownCommit();
    this.host.afterCommit();
    return outcomes;
  }

  /** The commit failed: every write of the group gets what a lone write would have got. */
  private settleFailedGroup(group: readonly QueuedWrite[], error: unknown): void {
    const kind = classifySqliteError(error);
    if (kind === "corrupt") this.host.markCorrupt((error as Error).message);
    for (const w of group) {
      if (kind === "corrupt") w.reject(this.failures.corrupt(w.ops, (error as Error).message));
      else if (kind === "full") w.reject(this.failures.diskFull());
      else if (kind === "io") w.reject(this.failures.diskFailed(error));
      else w.reject(error);
    }
  }

  private retryOptions(what: string) {
    return {
      budgetMs: this.options.writeRetryBudgetMs ?? 30_000,
      deps: this.deps,
      what,
      onRetry: (attempt: number, waited: number, nextIn: number) =>
        this.host.emit({
          type: "store.busy_retry",
          path: this.options.path,
          attempt,
          waited_ms: waited,
          next_in_ms: nextIn,
        }),
    };
  }
}

const DONE = Promise.resolve();

/** Whether commits are synced by WalSync (synchronous: full, unless a diagnostic says inline). */
export function syncsOffLoop(options: StoreOptions): boolean {
  return (options.synchronous ?? "full") === "full" && options.syncOffLoop !== false;
}
