// The instance registry's rows in PostgreSQL (schema 2), and who is alive: each instance's session
// advisory lock (pg-instance-lock.ts), all of them read from pg_locks in one query. Every time
// written here is the database's clock (now()), the one clock every host of the profile shares;
// a heartbeat returns it, so the caller can measure its own clock's skew.
import {
  INSTANCE_COLUMNS,
  type InstanceLockState,
  type InstanceView,
  type LockLiveness,
  type NamedLock,
  type NamedLockOptions,
  type NewInstance,
  toInstanceView,
} from "../instance-types.js";
import {
  HELD_ADVISORY_KEYS,
  instanceLockKey,
  type LockConnectionSettings,
  PgInstanceLock,
} from "./pg-instance-lock.js";
import { PgNamedLock } from "./pg-named-lock.js";
import type { Query } from "./pg-reads.js";

/** The database's clock in ms since the epoch (the statement's transaction time). */
const DB_NOW = "floor(extract(epoch FROM now()) * 1000)::bigint";

export async function listPgInstances(q: Query): Promise<InstanceView[]> {
  const rows = await q(`SELECT ${INSTANCE_COLUMNS} FROM instances ORDER BY started_at, id COLLATE "C"`);
  return rows.map(toInstanceView);
}

export class PgInstances implements LockLiveness {
  readonly liveness = "lock" as const;

  constructor(
    private readonly q: Query,
    private readonly connection: Omit<LockConnectionSettings, "retryMs">,
  ) {}

  async now(): Promise<number> {
    const [row] = await this.q<{ now: number }>(`SELECT ${DB_NOW} AS now`);
    return Number(row?.now);
  }

  async register(instance: NewInstance): Promise<number> {
    const [row] = await this.q<{ started_at: number }>(
      `INSERT INTO instances (id, host, pid, started_at, heartbeat_at, version, meta)
       VALUES ($1, $2, $3, ${DB_NOW}, ${DB_NOW}, $4, $5)
       ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, meta = excluded.meta
       RETURNING started_at`,
      [instance.id, instance.host, instance.pid, instance.version, JSON.stringify(instance.meta)],
    );
    return Number(row?.started_at);
  }

  async heartbeat(id: string, meta?: Record<string, unknown>): Promise<number | null> {
    const rows =
      meta === undefined
        ? await this.q<{ at: number }>(
            `UPDATE instances SET heartbeat_at = ${DB_NOW} WHERE id = $1 AND stopped_at IS NULL
             RETURNING heartbeat_at AS at`,
            [id],
          )
        : await this.q<{ at: number }>(
            `UPDATE instances SET heartbeat_at = ${DB_NOW}, meta = $2 WHERE id = $1 AND stopped_at IS NULL
             RETURNING heartbeat_at AS at`,
            [id, JSON.stringify(meta)],
          );
    return rows[0] === undefined ? null : Number(rows[0].at);
  }

  async stop(id: string): Promise<void> {
    await this.q(`UPDATE instances SET stopped_at = coalesce(stopped_at, ${DB_NOW}) WHERE id = $1`, [id]);
  }

  async prune(olderThanMs: number): Promise<string[]> {
    const rows = await this.q<{ id: string }>(
      `DELETE FROM instances WHERE (stopped_at IS NOT NULL AND stopped_at < ${DB_NOW} - $1)
         OR heartbeat_at < ${DB_NOW} - $1 RETURNING id`,
      [olderThanMs],
    );
    return rows.map((r) => r.id);
  }

  async lockHolders(ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const byKey = new Map(ids.map((id) => [instanceLockKey(id), id]));
    const rows = await this.q<{ key: string }>(
      `SELECT h.key FROM (${HELD_ADVISORY_KEYS}) h WHERE h.key = ANY($1::text[])`,
      [[...byKey.keys()]],
    );
    const held = new Set<string>();
    for (const { key } of rows) {
      const id = byKey.get(key);
      if (id !== undefined) held.add(id);
    }
    return held;
  }

  lock(
    id: string,
    onChange: (state: InstanceLockState, detail: string | null) => void,
    options: { retryMs?: number } = {},
  ): PgInstanceLock {
    return new PgInstanceLock(id, { ...this.connection, retryMs: options.retryMs ?? 1_000 }, onChange);
  }

  namedLock(name: string, options: NamedLockOptions): NamedLock {
    return new PgNamedLock(name, options, this.connection);
  }
}
