// Opening a profile's store in PostgreSQL: a pool on the URL, the database's identity checked and
// its schema migrated (pg-migrate.ts), then the store. A database that cannot be reached, holds
// another profile's store or a newer schema is refused with a StoreOpenError that says what to do.
import type { Deps, Timers } from "../../core/deps.js";
import type { Redactor } from "../../core/redact.js";
import { StoreOpenError } from "../errors.js";
import { classifyPgError, createPool } from "./pg-connection.js";
import { describeError } from "./pg-failures.js";
import { migratePostgres } from "./pg-migrate.js";
import { urlWithoutPassword } from "./pg-url.js";
import { PostgresStore } from "./postgres-store.js";

export interface PostgresStoreOptions {
  /** postgres://user:password@host:port/database (the password is never printed). */
  url: string;
  profile: string;
  /** Where writes the database cannot take are kept (the profile's spool folder). */
  spoolDir: string;
  /** The profile's secrets, redacted from every write before it is stored or spooled. */
  redactor?: Redactor;
  deps?: Partial<Deps>;
  /** Connections in the pool at most (default 10). */
  poolMax?: number;
  /** How long a connection attempt waits before the database counts as unreachable (default 5 s). */
  connectTimeoutMs?: number;
  /** How long one statement may take before it is given up (default 30 s; pg-connection.ts). */
  statementTimeoutMs?: number;
  /** While the database is unreachable, how often it is pinged to notice its return (default 1 s). */
  pingEveryMs?: number;
  timers?: Timers;
  /** Attempts of a transaction PostgreSQL keeps choosing as a victim (default 8). */
  maxAttempts?: number;
}

export async function openPostgresStore(options: PostgresStoreOptions): Promise<PostgresStore> {
  const where = urlWithoutPassword(options.url);
  let store: PostgresStore | null = null;
  const pool = createPool(
    {
      url: options.url,
      max: options.poolMax,
      connectTimeoutMs: options.connectTimeoutMs,
      statementTimeoutMs: options.statementTimeoutMs,
    },
    (error) => store?.idleConnectionFailed(error),
  );
  try {
    const identity = await migratePostgres(pool, options.profile, where);
    store = new PostgresStore(options, pool, where, identity.storeId);
    return store;
  } catch (error) {
    await pool.end().catch(() => undefined);
    if (classifyPgError(error) !== "unavailable") throw error;
    throw new StoreOpenError(
      "store_unavailable",
      `the PostgreSQL database ${where} cannot be reached (${describeError(error)})`,
      { hint: `start PostgreSQL at ${where} (or fix the network to it), then try again`, cause: error },
    );
  }
}
