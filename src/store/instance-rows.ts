// The instance registry's rows in SQLite (migration 6): written on the Store's own connection in
// short statements of their own, retried while another process holds the write lock, never through
// the group commit or the spool (a heartbeat is worth nothing replayed later). One host shares the
// file, so the local clock is the engine's and a pid says whether a process runs.
import type Database from "better-sqlite3";
import type { Deps } from "../core/deps.js";
import { retryWhileBusy } from "./busy-retry.js";
import { StoreError } from "./errors.js";
import {
  INSTANCE_COLUMNS,
  type InstanceView,
  type NamedLock,
  type NamedLockOptions,
  type NewInstance,
  type ProcessLiveness,
  toInstanceView,
} from "./instance-types.js";
import { LocalNamedLock } from "./local-named-lock.js";

/** Every instance, oldest first; none from a store older than migration 6 (a reader reads any). */
export function listInstances(db: Database.Database): InstanceView[] {
  const table = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'instances'").get();
  if (table === undefined) return [];
  const rows = db
    .prepare(`SELECT ${INSTANCE_COLUMNS} FROM instances ORDER BY started_at, id`)
    .all() as Record<string, unknown>[];
  return rows.map(toInstanceView);
}

export interface SqliteInstancesOptions {
  /** The Store's writing connection; null once it is corrupt or closed. */
  db(): Database.Database | null;
  /** Told after each write: the Store's WAL sync must cover it. */
  afterWrite?(): void;
  deps: Deps;
  busyBudgetMs: number;
  where: string;
}

export class SqliteInstances implements ProcessLiveness {
  readonly liveness = "process" as const;

  constructor(private readonly options: SqliteInstancesOptions) {}

  private async write<T>(what: string, fn: (db: Database.Database) => T): Promise<T> {
    const db = this.options.db();
    if (db === null)
      throw new StoreError("store_closed", `the store ${this.options.where} cannot be written`);
    try {
      return await retryWhileBusy(() => fn(db), {
        budgetMs: this.options.busyBudgetMs,
        deps: this.options.deps,
        what: `${what} in ${this.options.where}`,
      });
    } finally {
      this.options.afterWrite?.();
    }
  }

  async now(): Promise<number> {
    return this.options.deps.clock.now();
  }

  namedLock(name: string, options: NamedLockOptions): NamedLock {
    return new LocalNamedLock(name, options);
  }

  register(instance: NewInstance): Promise<number> {
    const now = this.options.deps.clock.now();
    return this.write("register an instance", (db) => {
      db.prepare(
        `INSERT INTO instances (id, host, pid, started_at, heartbeat_at, version, meta)
         VALUES (@id, @host, @pid, @now, @now, @version, @meta)
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, meta = excluded.meta`,
      ).run({ ...instance, now, meta: JSON.stringify(instance.meta) });
      return db.prepare("SELECT started_at FROM instances WHERE id = ?").pluck().get(instance.id) as number;
    });
  }

  heartbeat(id: string, meta?: Record<string, unknown>): Promise<number | null> {
    const now = this.options.deps.clock.now();
    return this.write("note an instance's heartbeat", (db) => {
      const changes =
        meta === undefined
          ? db
              .prepare("UPDATE instances SET heartbeat_at = ? WHERE id = ? AND stopped_at IS NULL")
              .run(now, id).changes
          : db
              .prepare("UPDATE instances SET heartbeat_at = ?, meta = ? WHERE id = ? AND stopped_at IS NULL")
              .run(now, JSON.stringify(meta), id).changes;
      return changes === 0 ? null : now;
    });
  }

  async stop(id: string): Promise<void> {
    const now = this.options.deps.clock.now();
    await this.write("mark an instance stopped", (db) =>
      db.prepare("UPDATE instances SET stopped_at = coalesce(stopped_at, ?) WHERE id = ?").run(now, id),
    );
  }

  prune(olderThanMs: number): Promise<string[]> {
    const cutoff = this.options.deps.clock.now() - olderThanMs;
    return this.write(
      "prune old instances",
      (db) =>
        db
          .prepare(
            `DELETE FROM instances WHERE (stopped_at IS NOT NULL AND stopped_at < @cutoff)
             OR heartbeat_at < @cutoff RETURNING id`,
          )
          .pluck()
          .all({ cutoff }) as string[],
    );
  }
}
