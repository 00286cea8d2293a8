// Group commit for the store's one writer: writes made while the event loop is busy (concurrent
// turns) wait for its next turn and are committed together, in call order, in one transaction and
// so one sync of the disk. Each write is a savepoint of its own, so a write that fails by itself
// (an unknown session) is refused alone; a failure of the commit fails the whole group.
import { startSpan } from "../core/trace.js";
import { classifySqliteError } from "./errors.js";
import type { ApplyOptions, OpResult, WriteOp } from "./ops.js";

export interface QueuedWrite {
  ops: WriteOp[];
  options: ApplyOptions;
  resolve(results: OpResult[]): void;
  reject(error: unknown): void;
  /** Told when the write is committed (visible to reads), before it is durable. */
  applied?: (results: OpResult[]) => void;
}

export type WriteOutcome = { ok: true; results: OpResult[] } | { ok: false; error: unknown };

export interface GroupCommitter {
  /** Commit a group (retrying while another process holds the lock); throws when the commit fails. */
  commit(group: readonly QueuedWrite[]): Promise<WriteOutcome[]>;
  /** The same, at once and without waiting (when the store closes). */
  commitNow(group: readonly QueuedWrite[]): WriteOutcome[];
  /** Resolves once what is committed so far is on disk; rejects with the error to give the group. */
  durable(): Promise<void>;
  /** The same, at once (when the store closes); throws the error to give the group. */
  durableNow(): void;
  /** The commit failed: give every write of the group the error a lone write would get. */
  fail(group: readonly QueuedWrite[], error: unknown): void;
}

export class GroupCommit {
  private queued: QueuedWrite[] = [];
  private scheduled = false;
  /** One group at a time: a group waiting out another process's lock holds the next back. */
  private committing: Promise<void> = Promise.resolve();

  constructor(private readonly committer: GroupCommitter) {}

  /** Resolves once the write's group has committed and is durable (the acknowledgement). */
  add(ops: WriteOp[], options: ApplyOptions, applied?: (results: OpResult[]) => void): Promise<OpResult[]> {
    return new Promise((resolve, reject) => {
      this.queued.push({ ops, options, resolve, reject, ...(applied ? { applied } : {}) });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.committing = this.committing.then(() => this.commitQueued());
      });
    });
  }

  /**
   * The same, also saying when the write is committed and visible to reads, which is before it is
   * durable: `applied` rejects as `durable` does when the write is refused.
   */
  addStaged(
    ops: WriteOp[],
    options: ApplyOptions,
  ): { applied: Promise<OpResult[]>; durable: Promise<OpResult[]> } {
    let markApplied!: (results: OpResult[]) => void;
    const applied = new Promise<OpResult[]>((resolve) => {
      markApplied = resolve;
    });
    const durable = this.add(ops, options, markApplied);
    const either = Promise.race([applied, durable]);
    // A caller that waits on only one of the two must not leave the other's refusal unhandled.
    either.catch(() => {});
    return { applied: either, durable };
  }

  /** Resolves once every group committed so far (the one committing now included) is durable. */
  durable(): Promise<void> {
    return this.committing.then(() => this.committer.durable());
  }

  /** Commit what waits now (a caller that did not wait for its write when the store closes). */
  drainNow(): void {
    const group = this.queued.splice(0);
    if (group.length === 0) return;
    try {
      const outcomes = this.committer.commitNow(group);
      tellApplied(group, outcomes);
      this.committer.durableNow();
      settle(group, outcomes);
    } catch (error) {
      this.committer.fail(group, error);
    }
  }

  private async commitQueued(): Promise<void> {
    const group = this.queued.splice(0);
    if (group.length === 0) return;
    // Part of the trace of the turn whose write opened the group; a commit outside a turn makes none.
    const span = startSpan(
      "tenax.store.commit",
      {
        "db.system.name": "sqlite",
        "db.operation.name": "COMMIT",
        "tenax.store.writes": group.length,
        "tenax.store.ops": group.reduce((n, w) => n + w.ops.length, 0),
      },
      { childOnly: true },
    );
    let outcomes: WriteOutcome[];
    try {
      outcomes = await this.committer.commit(group);
    } catch (error) {
      span.fail(classifySqliteError(error));
      span.end();
      this.committer.fail(group, error);
      return;
    }
    tellApplied(group, outcomes);
    span.event("applied");
    // Nothing in the group waits for a sync: the next synced commit makes it durable.
    if (group.every((w) => w.options.durableWithNext === true)) {
      span.end();
      settle(group, outcomes);
      return;
    }
    // Acknowledged once on disk; the next group does not wait for this one's sync to commit.
    this.committer.durable().then(
      () => {
        span.end();
        settle(group, outcomes);
      },
      (error: unknown) => {
        span.fail(classifySqliteError(error));
        span.end();
        this.committer.fail(group, error);
      },
    );
  }
}

/**
 * The group's writes inside the current transaction, one savepoint each (none for a lone write).
 * `inSavepoint` runs `apply` in a nested transaction (a savepoint), made once per connection.
 */
export function applyGroup(
  group: readonly QueuedWrite[],
  apply: (write: QueuedWrite) => OpResult[],
  inSavepoint: (write: QueuedWrite) => OpResult[],
): WriteOutcome[] {
  if (group.length === 1) return [{ ok: true, results: apply(group[0] as QueuedWrite) }];
  return group.map((w): WriteOutcome => {
    try {
      return { ok: true, results: inSavepoint(w) };
    } catch (error) {
      // Damage or a failing disk ends the whole group; anything else is this write's alone.
      if (["corrupt", "full", "io"].includes(classifySqliteError(error))) throw error;
      return { ok: false, error };
    }
  });
}

function tellApplied(group: readonly QueuedWrite[], outcomes: readonly WriteOutcome[]): void {
  group.forEach((w, i) => {
    const outcome = outcomes[i];
    if (outcome?.ok) w.applied?.(outcome.results);
  });
}

function settle(group: readonly QueuedWrite[], outcomes: readonly WriteOutcome[]): void {
  group.forEach((w, i) => {
    const outcome = outcomes[i];
    if (outcome?.ok) w.resolve(outcome.results);
    else w.reject(outcome?.error);
  });
}
