// Which provider keys are cooling down or disabled, kept in the profile's state.db so that every
// process of the profile (gateway, CLI, cron, subagents) skips a key another one saw limited.
// Rows name keys by fingerprint only; a value that does not look like one is refused.
import type Database from "better-sqlite3";
import { type Deps, defaultDeps } from "../core/deps.js";
import { retryWhileBusy } from "./busy-retry.js";
import { StoreError } from "./errors.js";

export const CREDENTIAL_STATUSES = ["ok", "cooling", "disabled"] as const;
export type CredentialStatus = (typeof CREDENTIAL_STATUSES)[number];

export interface CredentialState {
  provider: string;
  fingerprint: string;
  status: CredentialStatus;
  reason: string | null;
  /** Until when (ms since the epoch) a cooling key is skipped. */
  cooldown_until: number | null;
  /** Failures since the key last worked. */
  failures: number;
  updated_at: number;
}

export interface CredentialUpdate {
  status: CredentialStatus;
  reason?: string | null;
  cooldown_until?: number | null;
  /** "increment" counts one more failure, "reset" starts over at 0; left out, the count stays. */
  failures?: "increment" | "reset";
  now: number;
  /**
   * For status "ok" (a key that worked): clear only a state recorded at or before this time, the
   * moment the successful request was sent. A verdict another process recorded while that request
   * was in flight is newer news about the key, and it stands.
   */
  unless_changed_after?: number;
}

/** The ledger's interface, shared by the SQLite ledger and the in-memory one. */
export interface CredentialStateStore {
  record(provider: string, fingerprint: string, update: CredentialUpdate): Promise<CredentialState>;
  /** Every known key of the provider. */
  get(provider: string): Promise<CredentialState[]>;
  /** The given fingerprints that may be used at `now`, in the order given. */
  usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]>;
}

// Hex digests only: a string that could be an API key never reaches the table.
const FINGERPRINT = /^[0-9a-f]{12,64}$/;

function checkFingerprint(fingerprint: string): void {
  if (!FINGERPRINT.test(fingerprint)) {
    throw new StoreError(
      "credential_not_fingerprint",
      "the credential ledger stores key fingerprints only (12 to 64 lowercase hex digits)",
    );
  }
}

/** Whether a key in this state may be used at `now`; a key never seen is usable. */
export function isUsable(state: Pick<CredentialState, "status" | "cooldown_until"> | undefined, now: number) {
  if (!state) return true;
  switch (state.status) {
    case "ok":
      return true;
    case "cooling":
      return state.cooldown_until === null || state.cooldown_until <= now;
    case "disabled":
      return false;
    default: {
      const never: never = state.status;
      return never;
    }
  }
}

/**
 * How two verdicts about one key combine, whichever process recorded them, so the ledger never
 * forgets the stricter one: a disabled key stays disabled when a late rate limit arrives, a
 * cooldown is never shortened by a shorter one, and a success clears only what is not newer than
 * the request that succeeded. The SQL upsert below says the same thing.
 */
export function nextState(
  previous: CredentialState | undefined,
  provider: string,
  fingerprint: string,
  update: CredentialUpdate,
): CredentialState {
  if (
    previous &&
    update.status === "ok" &&
    update.unless_changed_after !== undefined &&
    previous.updated_at > update.unless_changed_after
  ) {
    return previous;
  }
  const keepDisabled = previous?.status === "disabled" && update.status === "cooling";
  const bothCooling = previous?.status === "cooling" && update.status === "cooling";
  const failures =
    update.failures === "increment"
      ? (previous?.failures ?? 0) + 1
      : update.failures === "reset"
        ? 0
        : (previous?.failures ?? 0);
  const until = update.cooldown_until ?? null;
  return {
    provider,
    fingerprint,
    status: keepDisabled ? "disabled" : update.status,
    reason: keepDisabled ? (previous?.reason ?? null) : (update.reason ?? null),
    cooldown_until: keepDisabled
      ? null
      : bothCooling && until !== null && (previous?.cooldown_until ?? 0) > until
        ? (previous?.cooldown_until ?? null)
        : until,
    failures,
    updated_at: update.now,
  };
}

function int(value: unknown): number | null {
  return typeof value === "number" && Number.isSafeInteger(value) ? value : null;
}

/** A row read back; anything odd in it reads as the harmless choice (usable, no failures). */
export function parseCredentialRow(row: Record<string, unknown>): CredentialState {
  const status = CREDENTIAL_STATUSES.find((s) => s === row.status) ?? "ok";
  return {
    provider: String(row.provider),
    fingerprint: String(row.fingerprint),
    status,
    reason: typeof row.reason === "string" ? row.reason : null,
    cooldown_until: int(row.cooldown_until),
    failures: int(row.failures) ?? 0,
    updated_at: int(row.updated_at) ?? 0,
  };
}

export interface CredentialLedgerOptions {
  deps?: Partial<Deps>;
  /** How long to keep retrying while another process holds the write lock. */
  busyBudgetMs?: number;
}

/** Every key state of every provider, read from a connection that may be read-only. */
export function readCredentialStates(db: Database.Database): CredentialState[] {
  // A store of schema version 1 (read by a newer reader) has no ledger yet.
  const table = db
    .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'credential_state'")
    .pluck()
    .get();
  if (table === undefined) return [];
  const rows = db.prepare("SELECT * FROM credential_state ORDER BY provider, fingerprint").all();
  return (rows as Record<string, unknown>[]).map(parseCredentialRow);
}

/** The ledger in state.db. Each call is one short statement, retried with jitter while busy. */
export class CredentialLedger implements CredentialStateStore {
  private readonly deps: Deps;
  private readonly budgetMs: number;
  private readonly upsert: Database.Statement;
  private readonly byProvider: Database.Statement;
  private readonly one: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    options: CredentialLedgerOptions = {},
  ) {
    this.deps = { ...defaultDeps, ...options.deps };
    this.budgetMs = options.busyBudgetMs ?? 5_000;
    // One statement, so a failure counted by two processes at once is counted twice.
    this.upsert = db.prepare(`
      INSERT INTO credential_state
        (provider, fingerprint, status, reason, cooldown_until, failures, updated_at)
      VALUES (@provider, @fingerprint, @status, @reason, @cooldown_until, @first_failures, @now)
      ON CONFLICT (provider, fingerprint) DO UPDATE SET
        status = CASE WHEN status = 'disabled' AND excluded.status = 'cooling' THEN 'disabled'
                      ELSE excluded.status END,
        reason = CASE WHEN status = 'disabled' AND excluded.status = 'cooling' THEN reason
                      ELSE excluded.reason END,
        cooldown_until = CASE
          WHEN status = 'disabled' AND excluded.status = 'cooling' THEN NULL
          WHEN status = 'cooling' AND excluded.status = 'cooling'
               AND cooldown_until > excluded.cooldown_until THEN cooldown_until
          ELSE excluded.cooldown_until END,
        failures = CASE @mode WHEN 'increment' THEN failures + 1 WHEN 'reset' THEN 0 ELSE failures END,
        updated_at = excluded.updated_at
      WHERE excluded.status != 'ok' OR @since IS NULL OR updated_at <= @since
      RETURNING *`);
    this.one = db.prepare("SELECT * FROM credential_state WHERE provider = ? AND fingerprint = ?");
    this.byProvider = db.prepare("SELECT * FROM credential_state WHERE provider = ? ORDER BY fingerprint");
  }

  async record(provider: string, fingerprint: string, update: CredentialUpdate): Promise<CredentialState> {
    checkFingerprint(fingerprint);
    const params = {
      provider,
      fingerprint,
      status: update.status,
      reason: update.reason ?? null,
      cooldown_until: update.cooldown_until ?? null,
      first_failures: update.failures === "increment" ? 1 : 0,
      mode: update.failures ?? "keep",
      now: update.now,
      since: update.unless_changed_after ?? null,
    };
    const row = await retryWhileBusy(
      // No row back means the guard kept a newer verdict: report the state as it stands.
      () => (this.upsert.get(params) ?? this.one.get(provider, fingerprint)) as Record<string, unknown>,
      {
        budgetMs: this.budgetMs,
        deps: this.deps,
        what: `record the state of a ${provider} key in ${this.db.name}`,
      },
    );
    return parseCredentialRow(row);
  }

  async get(provider: string): Promise<CredentialState[]> {
    const rows = await retryWhileBusy(() => this.byProvider.all(provider) as Record<string, unknown>[], {
      budgetMs: this.budgetMs,
      deps: this.deps,
      what: `read the state of ${provider} keys from ${this.db.name}`,
    });
    return rows.map(parseCredentialRow);
  }

  async usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]> {
    const known = new Map((await this.get(provider)).map((s) => [s.fingerprint, s]));
    return fingerprints.filter((f) => isUsable(known.get(f), now));
  }
}

/** The same ledger for one process only: for tests and for runs without a store. */
export class MemoryCredentialLedger implements CredentialStateStore {
  private readonly rows = new Map<string, CredentialState>();

  /** Start from known states (what a store held before it became unwritable). */
  constructor(initial: readonly CredentialState[] = []) {
    for (const state of initial) this.rows.set(`${state.provider}\u0000${state.fingerprint}`, { ...state });
  }

  async record(provider: string, fingerprint: string, update: CredentialUpdate): Promise<CredentialState> {
    checkFingerprint(fingerprint);
    const key = `${provider}\u0000${fingerprint}`;
    const state = nextState(this.rows.get(key), provider, fingerprint, update);
    this.rows.set(key, state);
    return { ...state };
  }

  async get(provider: string): Promise<CredentialState[]> {
    return [...this.rows.values()]
      .filter((s) => s.provider === provider)
      .sort((a, b) => (a.fingerprint < b.fingerprint ? -1 : 1))
      .map((s) => ({ ...s }));
  }

  async usable(provider: string, fingerprints: readonly string[], now: number): Promise<string[]> {
    const known = new Map((await this.get(provider)).map((s) => [s.fingerprint, s]));
    return fingerprints.filter((f) => isUsable(known.get(f), now));
  }
}
