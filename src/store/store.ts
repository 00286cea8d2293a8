// A profile's SQLite session store, the adapter of the store port: one writing connection per
// store per process (through the registry), the port's reads over it (SqliteReads, the repository
// of queries in store-reader.ts), the connection's lifecycle, health and checks, and a sticky
// failure mode for corruption: once a write, a read or a check meets a damaged file, every later
// write goes to the spool, and the handle is closed without a WAL checkpoint. How a write is
// committed and acknowledged (group commit, the WAL's sync, what a refused write is told) is the
// write path's: write-path.ts, which states what it promises.
import Database from "better-sqlite3";
import { type Clock, type Deps, defaultDeps } from "../core/deps.js";
import { retryWhileBusy } from "./busy-retry.js";
import type { CredentialStateStore } from "./credential-ledger.js";
import { StoreError } from "./errors.js";
import { SqliteInstances } from "./instance-rows.js";
import type { InstanceStore } from "./instance-types.js";
import { checkIntegrity, type IntegrityResult } from "./integrity.js";
import { openDatabase, recoverCommand } from "./open-database.js";
import type { ApplyOptions, OpResult, WriteOp } from "./ops.js";
import type { StorePort } from "./port.js";
import { SearchIndex } from "./search-index.js";
import { SearchQueue } from "./search-queue.js";
import { Spool } from "./spool.js";
import { StoreCredentials } from "./store-credentials.js";
import { type StagedWrite, StoreDomain } from "./store-domain.js";
import { StoreFailures } from "./store-failures.js";
import { SqliteReads, type StoreLocation } from "./store-reader.js";
import type { StoreHealth, StoreOptions } from "./store-types.js";
import { syncsOffLoop, WritePath } from "./write-path.js";

export type { NewMessage, NewSession, StoreEvent, StoreHealth, StoreOptions } from "./store-types.js";

/**
 * The SQLite adapter of the store port: the domain's writes (StoreDomain) committed by the write
 * path (WritePath), and the port's reads done by SqliteReads over this store's connection.
 * SQLite-only extras (integrity checks, damage reports, the search queue, health details) stay on
 * this class.
 */
export class Store extends StoreDomain implements StorePort {
  readonly engine = "sqlite" as const;
  readonly where: string;
  readonly location: StoreLocation;
  protected readonly clock: Clock;
  protected readonly reads: SqliteReads;
  private db: Database.Database | null;
  private guard: Database.Database | null = null;
  private readonly spool: Spool;
  private readonly failures: StoreFailures;
  private readonly deps: Deps;
  private corrupt: StoreHealth["corrupt"] = null;
  /** How a write is committed and acknowledged (write-path.ts). */
  private readonly writes: WritePath;
  private integrity: IntegrityResult | null = null;
  private ledger: StoreCredentials | null = null;
  private registryRows: SqliteInstances | null = null;
  private closed = false;
  readonly index: SearchQueue;

  private constructor(
    private readonly options: StoreOptions,
    db: Database.Database,
  ) {
    super();
    this.location = options;
    this.where = options.path;
    this.db = db;
    this.deps = { ...defaultDeps, ...options.deps };
    this.clock = this.deps.clock;
    this.reads = new SqliteReads({
      location: this.location,
      readDb: () => this.readDb(),
      searchIndex: () => this.searchIndex(),
      prepareSearch: () => this.prepareSearch(),
      onCorruptRead: (error) => this.markCorrupt(`a read failed: ${(error as Error).message}`),
      onSearchFailure: (error) => this.index.degrade(error),
      searchProblem: () => this.index.problem(),
    });
    this.spool = new Spool(options.spoolDir, options.profile, options.path);
    this.failures = new StoreFailures(this.location, this.spool, options.spoolDir, this.deps.clock, (e) =>
      this.emit(e),
    );
    this.writes = new WritePath(db, options, this.deps, this.failures, {
      connection: () => this.db,
      damaged: () => this.corrupt,
      markCorrupt: (detail) => this.markCorrupt(detail),
      afterCommit: () => this.index.schedule(),
      fence: (written, ops) => this.fencing(written, this.location.path, ops),
      emit: (e) => this.emit(e),
    });
    this.index = new SearchQueue(
      db,
      new SearchIndex(options.searchPath, storeId(db), false),
      (e) => this.emit(e),
      () => this.ownCommit(),
    );
  }

  /** A commit of this connection outside the groups (the search queue, the ledger, the registry). */
  private ownCommit(): void {
    this.writes.ownCommit();
  }

  /** Open the writable store. Use the registry (openStore) instead: it keeps one per process. */
  static async open(options: StoreOptions): Promise<Store> {
    // Opening may migrate and stamp the identity: writes that can meet another process's lock too.
    const db = await retryWhileBusy(
      () =>
        openDatabase(options.path, {
          readonly: false,
          profile: options.profile,
          // With the WAL synced off the loop (WalSync), SQLite itself does not sync commits.
          synchronous: syncsOffLoop(options) ? "normal" : (options.synchronous ?? "full"),
          busyTimeoutMs: options.busyTimeoutMs ?? 100,
        }),
      {
        budgetMs: options.writeRetryBudgetMs ?? 30_000,
        deps: { ...defaultDeps, ...options.deps },
        what: `open ${options.path}`,
      },
    );
    const store = new Store(options, db);
    await store.runOpenChecks();
    return store;
  }

  private async runOpenChecks(): Promise<void> {
    this.index.start();
    const budget = this.options.integrityCheckTimeoutMs ?? 2000;
    // Only state.db is checked on open: search.db is derived, and FTS5's own check of a large
    // index takes seconds; its damage shows on use and is rebuilt. `checkIntegrity` checks both.
    if (budget > 0) await this.checkIntegrity("quick", budget, { search: false });
  }

  private readDb(): Database.Database {
    const db = this.db ?? this.guard;
    if (db === null) throw new StoreError("store_closed", `the store ${this.location.path} is closed`);
    return db;
  }

  private searchIndex(): SearchIndex | null {
    return this.index.ready ? this.index.index : null;
  }

  private prepareSearch(): void {
    // Bring the index nearly up to date without ever blocking long; the result says what is left.
    if (this.db !== null) this.index.flush(50);
  }

  // ---- the shared key ledger -----------------------------------------------------------------

  /**
   * The credential ledger in this store, shared by every process of the profile. Should the store
   * become unwritable (corrupt or closed), the ledger goes on in this process's memory, so a dead
   * key is still skipped here; health shows `credentials_local: true` meanwhile.
   */
  credentials(): CredentialStateStore {
    this.ledger ??= new StoreCredentials({
      db: () => this.db,
      guard: () => this.guard,
      onCorrupt: (detail) => this.markCorrupt(detail),
      afterWrite: () => this.ownCommit(),
      deps: this.deps,
      busyBudgetMs: this.options.writeRetryBudgetMs ?? 30_000,
    });
    return this.ledger;
  }

  /** The instance registry's rows, on this connection (a corrupt or closed store refuses them). */
  instances(): InstanceStore {
    this.registryRows ??= new SqliteInstances({
      db: () => this.db,
      afterWrite: () => this.ownCommit(),
      deps: this.deps,
      busyBudgetMs: this.options.writeRetryBudgetMs ?? 30_000,
      where: this.location.path,
    });
    return this.registryRows;
  }

  // ---- writes: the write path's (write-path.ts) ------------------------------------------------

  /**
   * Apply operations in one transaction. Resolves once they are committed and durable (the
   * acknowledgement). Writes made while the event loop is busy are committed together, one sync
   * of the disk for all; a write that fails by itself is refused alone (write-path.ts).
   */
  write(written: WriteOp[], options: ApplyOptions = {}): Promise<OpResult[]> {
    return this.writes.write(written, options);
  }

  /** The same, also saying when the write is committed and visible to reads, before it is durable. */
  writeStaged(written: WriteOp[], options: ApplyOptions = {}): StagedWrite {
    return this.writes.writeStaged(written, options);
  }

  durableSoFar(): Promise<void> {
    return this.writes.durableSoFar();
  }

  /**
   * Another look at the file (the health check's read-only probe) met damage: stop writing at
   * once, exactly as if a write had met it. A store that health calls down never acknowledges
   * another write: its two voices agree.
   */
  reportDamage(detail: string): void {
    this.markCorrupt(detail);
  }

  /** Sticky: never write through this handle again, and close it without a WAL checkpoint. */
  private markCorrupt(detail: string): void {
    // A check that ends after close() finds a store this process no longer holds.
    if (this.corrupt !== null || this.closed) return;
    const recover = recoverCommand(this.location.path, this.location.profile);
    this.corrupt = { detail, since: this.deps.clock.now(), recover };
    this.index.stop();
    // What was committed before is synced now; a group whose sync comes later is answered by this.
    this.writes.seal();
    // A read-only connection holding its shared lock makes the writer's close skip the checkpoint
    // (only the last connection checkpoints), and being read-only it can never checkpoint itself.
    try {
      this.guard = new Database(this.location.path, { readonly: true, fileMustExist: true });
      this.guard.pragma("schema_version");
    } catch {
      this.guard = null;
    }
    try {
      this.db?.close();
    } catch {
      // Closing a damaged handle may fail; it is dropped either way.
    }
    this.db = null;
    this.emit({ type: "store.corrupt", path: this.location.path, detail, recover });
  }

  // ---- reads: the port's come from ReadView, answered by SqliteReads over this connection ----

  /** Delete sessions idle since before the cutoff, one short transaction each; running turns are kept. */
  async pruneSessions(cutoffMs: number, dryRun = false): Promise<string[]> {
    const ids = this.reads.readNow((db) =>
      db
        .prepare(
          `SELECT id FROM sessions s WHERE typeof(updated_at) = 'integer' AND updated_at < ?
           AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.status = 'running')`,
        )
        .pluck()
        .all(cutoffMs),
    ) as string[];
    if (!dryRun) for (const id of ids) await this.deleteSession(id);
    return ids;
  }

  // ---- health and lifecycle ---------------------------------------------------------------

  /**
   * Check state.db (and search.db) for damage, within a time budget; a late result still counts.
   * A damaged state.db makes the store sticky-corrupt; a damaged index is rebuilt.
   */
  async checkIntegrity(
    mode: "quick" | "full" = "full",
    timeoutMs = 60_000,
    options: { search?: boolean } = {},
  ): Promise<IntegrityResult> {
    const search = options.search === false ? null : this.checkSearch(timeoutMs);
    const result = await this.checkState(mode, timeoutMs);
    await search;
    return result;
  }

  /**
   * SQLite's check of state.db, on a read-only connection of its own in a worker thread: damage
   * marks the store corrupt, exactly as a write that meets it. `announce: "changes"` (the
   * verifier's routine passes) emits `store.integrity` only when the status differs from the last.
   */
  async checkState(
    mode: "quick" | "full",
    timeoutMs: number,
    announce: "always" | "changes" = "always",
  ): Promise<IntegrityResult> {
    const onResult = (result: IntegrityResult) => {
      const previous = this.integrity?.status;
      this.integrity = result;
      if (announce === "always" || previous !== result.status)
        this.emit({ type: "store.integrity", path: this.location.path, result });
      if (result.status === "corrupt")
        this.markCorrupt(`integrity check failed: ${result.detail.join("; ")}`);
    };
    const result = await checkIntegrity(this.location.path, { mode, timeoutMs, onLate: onResult });
    onResult(result);
    return result;
  }

  /**
   * search.db's check while the index is in use (null when it is not: being rebuilt, paused or
   * already degraded). Damage there is scoped to search: the index is rebuilt from state.db.
   * `scope: "tables"` checks the b-trees of its tables without FTS5's own check of the index's
   * contents, a tenth of the cost (the verifier's routine slice).
   */
  async checkSearch(timeoutMs: number, scope: "file" | "tables" = "file"): Promise<IntegrityResult | null> {
    if (!this.index.ready) return null;
    const onResult = (result: IntegrityResult) => {
      // A check that ends after close() has no index to rebuild here.
      if (result.status === "corrupt" && !this.closed)
        this.index.degrade(new Error(result.detail.join("; ")));
    };
    const result = await checkIntegrity(this.location.searchPath, {
      mode: "quick",
      scope,
      timeoutMs,
      onLate: onResult,
    });
    onResult(result);
    return result;
  }

  health(): StoreHealth {
    return {
      engine: "sqlite",
      path: this.location.path,
      unavailable: null,
      writable: this.db !== null && this.writes.diskFailure === null,
      corrupt: this.corrupt,
      disk_failure: this.writes.diskFailure,
      integrity: this.integrity,
      spooled_records: this.failures.spooledRecords,
      search: this.index.health(),
      credentials_local: this.ledger?.local ?? false,
    };
  }

  close(): void {
    // Writes still queued for a group commit are committed now (a caller that did not wait).
    this.writes.drain();
    // A short-lived process (one CLI turn) must not leave its messages waiting for the next writer.
    if (this.db !== null) this.index.flush();
    this.index.stop();
    this.spool.close();
    if (this.db !== null) {
      this.db.close();
      this.db = null;
    }
    this.writes.close();
    this.closed = true;
    // The guard of a corrupt store is left open on purpose: closing it last could not checkpoint
    // (it is read-only), but keeping it means no other handle of ours can become the last one.
  }
}

function storeId(db: Database.Database): string {
  return db.prepare("SELECT value FROM meta WHERE key = 'store_id'").pluck().get() as string;
}
