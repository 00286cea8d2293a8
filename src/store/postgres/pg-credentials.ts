// The shared key ledger on PostgreSQL: the same verdict merge as SQLite's ledger (nextState in
// credential-ledger.ts, one pure function for every engine), applied to the row under its lock.
// A verdict first makes sure the row exists, then locks it (SELECT … FOR UPDATE), so two processes
// recording verdicts about one key at once combine them one after the other, neither lost.
import type pg from "pg";
import { TenaxError } from "../../core/errors.js";
import {
  type CredentialState,
  type CredentialStateStore,
  type CredentialUpdate,
  isUsable,
  MemoryCredentialLedger,
  nextState,
  parseCredentialRow,
} from "../credential-ledger.js";
import { StoreError } from "../errors.js";

const FINGERPRINT = /^[0-9a-f]{12,64}$/;

export interface PgCredentialsOptions {
  /** Runs `work` in one transaction (retried on serialization failures and deadlocks). */
  transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /** Runs one read statement. */
  query(sql: string, values: unknown[]): Promise<Record<string, unknown>[]>;
}

export class PgCredentialLedger implements CredentialStateStore {
  constructor(private readonly options: PgCredentialsOptions) {}

  record(provider: string, fingerprint: string, update: CredentialUpdate): Promise<CredentialState> {
    if (!FINGERPRINT.test(fingerprint)) {
      return Promise.reject(
        new StoreError(
          "credential_not_fingerprint",
          "the credential ledger stores key fingerprints only (12 to 64 lowercase hex digits)",
        ),
      );
    }
    return this.options.transaction(async (client) => {
      // A row that was never there is created first, so there is a row whose lock concurrent
      // verdicts queue on; created by this transaction, it is no previous verdict.
      const created = await client.query(
        `INSERT INTO credential_state (provider, fingerprint, status, failures, updated_at)
         VALUES ($1, $2, 'ok', 0, 0) ON CONFLICT (provider, fingerprint) DO NOTHING`,
        [provider, fingerprint],
      );
      const locked = await client.query(
        "SELECT * FROM credential_state WHERE provider = $1 AND fingerprint = $2 FOR UPDATE",
        [provider, fingerprint],
      );
      const row = locked.rows[0] as Record<string, unknown> | undefined;
      const previous = row === undefined || created.rowCount === 1 ? undefined : parseCredentialRow(row);
      const state = nextState(previous, provider, fingerprint, update);
      await client.query(
        `UPDATE credential_state SET status = $3, reason = $4, cooldown_until = $5, failures = $6, updated_at = $7
         WHERE provider = $1 AND fingerprint = $2`,
        [
          provider,
          fingerprint,
          state.status,
          state.reason,
          state.cooldown_until,
          state.failures,
          state.updated_at,
        ],
      );
      return state;
    });
  }

  async get(provider: string): Promise<CredentialState[]> {
    const rows = await this.options.query(
      'SELECT * FROM credential_state WHERE provider = $1 ORDER BY fingerprint COLLATE "C"',
      [provider],
    );
    return rows.map(parseCredentialRow);
  }

  async usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]> {
    const known = new Map((await this.get(provider)).map((s) => [s.fingerprint, s]));
    return fingerprints.filter((f) => isUsable(known.get(f), now));
  }
}

/**
 * The ledger as the PostgreSQL store offers it: shared while the database answers; while it cannot
 * be reached, this process's memory, starting from the states last read, so a key known dead is
 * still skipped and model calls never wait on a database that is away. Once it answers again the
 * shared ledger is used again (verdicts recorded meanwhile stay in this process only).
 */
export class PgStoreCredentials implements CredentialStateStore {
  private readonly lastKnown = new Map<string, CredentialState>();
  private memory: MemoryCredentialLedger | null = null;

  constructor(
    private readonly shared: PgCredentialLedger,
    private readonly unavailable: () => boolean,
  ) {}

  /** True while verdicts are this process's alone (the database cannot be reached). */
  get local(): boolean {
    return this.memory !== null;
  }

  record(provider: string, fingerprint: string, update: CredentialUpdate): Promise<CredentialState> {
    return this.use(async (l) => {
      const state = await l.record(provider, fingerprint, update);
      this.remember([state]);
      return state;
    });
  }

  get(provider: string): Promise<CredentialState[]> {
    return this.use((l) => l.get(provider).then((states) => this.remember(states)));
  }

  async usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]> {
    const known = new Map((await this.get(provider)).map((s) => [s.fingerprint, s]));
    return fingerprints.filter((f) => isUsable(known.get(f), now));
  }

  private remember(states: CredentialState[]): CredentialState[] {
    for (const s of states) this.lastKnown.set(`${s.provider}\u0000${s.fingerprint}`, { ...s });
    return states;
  }

  private async use<T>(fn: (ledger: CredentialStateStore) => Promise<T>): Promise<T> {
    if (!this.unavailable()) {
      try {
        const result = await fn(this.shared);
        this.memory = null;
        return result;
      } catch (error) {
        if (!TenaxError.isInstance(error) || error.code !== "store_unavailable") throw error;
      }
    }
    this.memory ??= new MemoryCredentialLedger([...this.lastKnown.values()]);
    return fn(this.memory);
  }
}
