// The PostgreSQL adapter of the store port (port.ts): a profile's store in a PostgreSQL database,
// shared by processes on any number of machines. Writes are one READ COMMITTED transaction each
// (pg-transaction.ts) applying the same operations as SQLite (pg-ops.ts); reads return the same
// views. When the database cannot be reached, writes are refused with store_unavailable and kept
// in the spool, reads are refused too, and the pool reconnects by itself once it answers again.
import type pg from "pg";
import { backgroundTimers, type Clock, type Deps, defaultDeps } from "../../core/deps.js";
import type { CredentialStateStore } from "../credential-ledger.js";
import { StoreError } from "../errors.js";
import type { InstanceStore } from "../instance-types.js";
import type { ApplyOptions, OpResult, WriteOp } from "../ops.js";
import type { StoreEngineName, StorePort } from "../port.js";
import { Spool } from "../spool.js";
import { type StagedWrite, StoreDomain } from "../store-domain.js";
import type { StoreEvent, StoreHealth } from "../store-types.js";
import type { PostgresStoreOptions } from "./open-postgres.js";
import { Availability } from "./pg-availability.js";
import { classifyPgError } from "./pg-connection.js";
import { PgCredentialLedger, PgStoreCredentials } from "./pg-credentials.js";
import { describeError, PgFailures } from "./pg-failures.js";
import { PgInstances } from "./pg-instances.js";
import { PgListener } from "./pg-listener.js";
import { PgOpApplier } from "./pg-ops.js";
import type { Query } from "./pg-reads.js";
import { PgReads } from "./pg-repository.js";
import { CommitOutcomeUnknown, inTransaction } from "./pg-transaction.js";

export class PostgresStore extends StoreDomain implements StorePort {
  protected readonly reads: PgReads;
  readonly engine: StoreEngineName = "postgres";
  protected readonly clock: Clock;
  private readonly deps: Deps;
  private readonly spool: Spool;
  private readonly failures: PgFailures;
  private readonly availability: Availability;
  private ledger: PgStoreCredentials | null = null;
  private registryRows: PgInstances | null = null;
  private listener: PgListener | null = null;
  private ending: Promise<void> | null = null;

  constructor(
    private readonly options: PostgresStoreOptions,
    private readonly pool: pg.Pool,
    readonly where: string,
    /** The store's identity, kept in tenax_meta (the same for every process of the profile). */
    readonly storeId: string,
  ) {
    super();
    this.deps = { ...defaultDeps, ...options.deps };
    this.clock = this.deps.clock;
    this.spool = new Spool(options.spoolDir, options.profile, where);
    const emit = (event: StoreEvent) => this.emit(event);
    this.failures = new PgFailures(where, this.spool, this.clock, emit);
    this.availability = new Availability(
      where,
      this.clock,
      options.timers ?? backgroundTimers,
      emit,
      () => this.query("SELECT 1"),
      options.pingEveryMs ?? 1_000,
    );
    this.reads = new PgReads(this.query, where, options.profile);
  }

  /** Told by the pool that an idle connection died (the server went away under it). */
  idleConnectionFailed(error: unknown): void {
    if (classifyPgError(error) === "unavailable") this.availability.down(describeError(error));
  }

  private closedError(): StoreError {
    return new StoreError("store_closed", `the store ${this.where} is closed`);
  }

  /** One statement; a database that cannot be reached is noted and the read refused as such. */
  private readonly query: Query = async <R extends pg.QueryResultRow>(sql: string, values?: unknown[]) => {
    if (this.ending !== null) throw this.closedError();
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.pool.query<R>(sql, values);
        this.availability.up();
        return result.rows;
      } catch (error) {
        if (this.poolBusy(error)) throw this.failures.poolBusy(error, this.poolMax());
        if (isStatementTimeout(error)) throw this.failures.statementTimeout(error);
        if (classifyPgError(error) !== "unavailable") throw error;
        // A pooled connection the server closed since its last use: one more try on a new one.
        if (attempt < 2) continue;
        this.availability.down(describeError(error));
        throw this.failures.unavailableRead(error);
      }
    }
  };

  // ---- writes -------------------------------------------------------------------------------

  /** Apply operations in one transaction: all of them or none; resolves once committed. */
  write(written: WriteOp[], options: ApplyOptions = {}): Promise<OpResult[]> {
    if (this.ending !== null) return Promise.reject(this.closedError());
    const redactor = this.options.redactor;
    const ops = redactor === undefined || redactor.size === 0 ? written : redactor.redactDeep(written);
    return this.fencing(
      this.transaction((client) => new PgOpApplier(client).applyAll(ops, options), ops),
      this.where,
      ops,
    );
  }

  /** Every commit is durable when it returns. */
  durableSoFar(): Promise<void> {
    return Promise.resolve();
  }

  /** A PostgreSQL commit is durable when it returns: applied and durable are one promise. */
  writeStaged(ops: WriteOp[], options: ApplyOptions = {}): StagedWrite {
    const written = this.write(ops, options);
    return { applied: written, durable: written };
  }

  /** Run `work` in a transaction; a write's ops are spooled when the database cannot take them. */
  private async transaction<T>(
    work: (client: pg.PoolClient) => Promise<T>,
    ops: WriteOp[] | null,
  ): Promise<T> {
    try {
      const result = await inTransaction(this.pool, work, {
        deps: this.deps,
        maxAttempts: this.options.maxAttempts,
        onRetry: (attempt, _code, nextInMs) =>
          this.emit({
            type: "store.busy_retry",
            path: this.where,
            attempt,
            waited_ms: 0,
            next_in_ms: nextInMs,
          }),
      });
      this.availability.up();
      return result;
    } catch (error) {
      throw this.transactionFailed(error, ops);
    }
  }

  private transactionFailed(error: unknown, ops: WriteOp[] | null): unknown {
    if (this.poolBusy(error)) return this.failures.poolBusy(error, this.poolMax());
    if (isStatementTimeout(error)) return this.failures.statementTimeout(error);
    if (error instanceof CommitOutcomeUnknown) {
      this.availability.down(describeError(error.original));
      return this.failures.commitUnknown(ops ?? [], error.original);
    }
    if (classifyPgError(error) === "unavailable") {
      this.availability.down(describeError(error));
      return ops === null ? this.failures.unavailableRead(error) : this.failures.unavailableWrite(ops, error);
    }
    // Refused by the database itself (a conflict, a constraint): it answered, so it is up.
    this.availability.up();
    return error;
  }

  private poolMax(): number {
    return this.options.poolMax ?? 10;
  }

  /**
   * Waiting for a connection timed out while every connection of the pool was open: they are
   * busy (long transactions, lock waits), the database is not away. Nothing is spooled for it.
   */
  private poolBusy(error: unknown): boolean {
    const message = error instanceof Error ? error.message : "";
    return /timeout exceeded when trying to connect/i.test(message) && this.pool.totalCount >= this.poolMax();
  }

  /** Delete sessions idle since before the cutoff, one transaction each; running turns are kept. */
  async pruneSessions(cutoffMs: number, dryRun = false): Promise<string[]> {
    const rows = await this.query<{ id: string }>(
      `SELECT id FROM sessions s WHERE updated_at < $1
         AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.status = 'running')
       ORDER BY row_no`,
      [cutoffMs],
    );
    const ids = rows.map((r) => r.id);
    if (!dryRun) for (const id of ids) await this.deleteSession(id);
    return ids;
  }

  /**
   * The shared key ledger: every verdict merged under the key's row lock; in this process's memory
   * while the database cannot be reached (health says `credentials_local: true` meanwhile).
   */
  credentials(): CredentialStateStore {
    this.ledger ??= new PgStoreCredentials(
      new PgCredentialLedger({
        transaction: (work) => this.transaction(work, null),
        query: (sql, values) => this.query(sql, values),
      }),
      () => this.availability.unavailable !== null,
    );
    return this.ledger;
  }

  /**
   * The instance registry's rows through the pool, and each instance's liveness lock on a
   * connection of its own to the same database.
   */
  instances(): InstanceStore {
    this.registryRows ??= new PgInstances(this.query, {
      url: this.options.url,
      connectTimeoutMs: this.options.connectTimeoutMs ?? 5_000,
      timers: this.options.timers ?? backgroundTimers,
    });
    return this.registryRows;
  }

  /** Wake the processes listening on `channel` (a hint, never data: they read the store). */
  async notify(channel: string, payload: string): Promise<void> {
    await this.query("SELECT pg_notify($1, $2)", [channel, payload]);
  }

  /** Hear `channel`'s wake-ups from every process of the store, until the returned function is called. */
  listen(channel: string, handler: (payload: string) => void): () => void {
    this.listener ??= new PgListener({
      url: this.options.url,
      connectTimeoutMs: this.options.connectTimeoutMs ?? 5_000,
      timers: this.options.timers ?? backgroundTimers,
    });
    return this.listener.listen(channel, handler);
  }

  /** The database's clock (ms since the epoch): the one time every process of the profile shares. */
  async databaseNow(): Promise<number> {
    const [row] = await this.query<{ now: number }>(
      "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS now",
    );
    return Number(row?.now);
  }

  // ---- health and lifecycle ---------------------------------------------------------------

  /** As last seen, from state kept current by every statement and the ping while it is down. */
  health(): StoreHealth {
    const unavailable = this.availability.unavailable;
    return {
      engine: "postgres",
      path: this.where,
      writable: this.ending === null && unavailable === null,
      unavailable,
      corrupt: null,
      disk_failure: null,
      integrity: null,
      spooled_records: this.failures.spooledRecords,
      search: { status: "ok", detail: null, pending: 0 },
      credentials_local: this.ledger?.local ?? false,
    };
  }

  close(): void {
    if (this.ending !== null) return;
    this.availability.stop();
    this.spool.close();
    const listener = this.listener?.close() ?? Promise.resolve();
    this.ending = Promise.all([this.pool.end(), listener]).then(() => {});
  }

  /** close(), resolving once every connection of the pool is closed. */
  async shutdown(): Promise<void> {
    this.close();
    await this.ending;
  }
}

/** The server cancelled a statement that ran past statement_timeout (SQLSTATE 57014). */
function isStatementTimeout(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === "57014";
}
