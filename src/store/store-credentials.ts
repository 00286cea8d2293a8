// The key ledger as the writing Store offers it: on the Store's own connection while it can be
// written, and in this process's memory once it cannot (corrupt or closed), starting from what
// the ledger last held, so a key this process knew was dead is still skipped.
import type Database from "better-sqlite3";
import type { Deps } from "../core/deps.js";
import {
  CredentialLedger,
  type CredentialState,
  type CredentialStateStore,
  type CredentialUpdate,
  MemoryCredentialLedger,
  readCredentialStates,
} from "./credential-ledger.js";
import { classifySqliteError } from "./errors.js";

export interface StoreCredentialsOptions {
  /** The Store's writing connection; null once it is corrupt or closed. */
  db(): Database.Database | null;
  /** The read-only guard a corrupt Store keeps open, for the last readable state. */
  guard(): Database.Database | null;
  /** Tell the Store a ledger statement met damage (it stops writing at once). */
  onCorrupt(detail: string): void;
  /** Told after each write to the Store's file (or an attempt): its WAL sync must cover it. */
  afterWrite?(): void;
  deps: Deps;
  busyBudgetMs: number;
}

export class StoreCredentials implements CredentialStateStore {
  private shared: { db: Database.Database; ledger: CredentialLedger } | null = null;
  private memory: MemoryCredentialLedger | null = null;

  constructor(private readonly options: StoreCredentialsOptions) {}

  /** True once the ledger is this process's alone (the store could not be written). */
  get local(): boolean {
    return this.memory !== null;
  }

  record(provider: string, fingerprint: string, update: CredentialUpdate): Promise<CredentialState> {
    return this.use((l) => l.record(provider, fingerprint, update)).finally(() =>
      this.options.afterWrite?.(),
    );
  }

  get(provider: string): Promise<CredentialState[]> {
    return this.use((l) => l.get(provider));
  }

  usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]> {
    return this.use((l) => l.usable(provider, fingerprints, now));
  }

  private async use<T>(fn: (ledger: CredentialStateStore) => Promise<T>): Promise<T> {
    const db = this.memory === null ? this.options.db() : null;
    if (db !== null) {
      // Prepared statements belong to one connection: a new connection gets a new ledger.
      if (this.shared?.db !== db) {
        this.shared = {
          db,
          ledger: new CredentialLedger(db, {
            deps: this.options.deps,
            busyBudgetMs: this.options.busyBudgetMs,
          }),
        };
      }
      try {
        return await fn(this.shared.ledger);
      } catch (error) {
        if (classifySqliteError(error) !== "corrupt") throw error;
        this.options.onCorrupt(`the credential ledger met damage: ${(error as Error).message}`);
      }
    }
    this.shared = null;
    this.memory ??= new MemoryCredentialLedger(this.lastKnown());
    return fn(this.memory);
  }

  /** What the ledger held, read through the read-only guard when its pages are still readable. */
  private lastKnown(): CredentialState[] {
    try {
      const guard = this.options.guard();
      return guard ? readCredentialStates(guard) : [];
    } catch {
      return [];
    }
  }
}
