// The PostgreSQL adapter's connection layer: the pool (numbers come back as JS numbers, never
// strings), the URL as it may be printed (its password removed), and how a driver error is sorted
// by what the store must do about it (refuse as unavailable, retry the transaction, or pass on).
import pg from "pg";

/** A 64-bit integer column (BIGINT, count(*)): the store's values are ms timestamps and counts. */
const INT8_OID = 20;

const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === INT8_OID && format !== "binary"
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format as "text")) as pg.CustomTypesConfig["getTypeParser"],
};

export interface PoolSettings {
  url: string;
  /** Connections at most (default 10). */
  max?: number;
  /** How long a connection attempt waits before the database counts as unreachable (default 5 s). */
  connectTimeoutMs?: number;
  /**
   * How long one statement may take (default 30 s). The server cancels it then; a reply that never
   * comes (a network dropping packets, a host gone without a reset) is given up a second later.
   */
  statementTimeoutMs?: number;
}

/** A pool whose BIGINT columns are parsed as numbers; idle connections that die are dropped quietly. */
export function createPool(settings: PoolSettings, onIdleError: (error: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: settings.url,
    max: settings.max ?? 10,
    connectionTimeoutMillis: settings.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    keepAlive: true,
    // Without both a write could wait forever on a partitioned network: TCP keepalive notices only
    // after hours. The client's limit ends the wait and the connection is thrown away (unavailable).
    statement_timeout: settings.statementTimeoutMs ?? 30_000,
    query_timeout: (settings.statementTimeoutMs ?? 30_000) + 1_000,
    types,
  });
  // An idle connection the server ends (a restart) must never crash the process: the pool drops
  // it and the next query opens a new one.
  pool.on("error", onIdleError);
  // The pool listens for errors only while a connection is idle. One checked out in a transaction
  // can be told "terminating connection" between two statements, and an 'error' event nobody
  // listens to would end the process: the listener keeps it alive, and the next statement on that
  // connection fails as unreachable, which the transaction reports (and the pool then destroys it).
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  return pool;
}

export type PgFailure = "unavailable" | "retry" | "other";

const UNAVAILABLE_NODE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** SQLSTATEs saying the server is going away, starting, or cannot take a connection now. */
const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300", "57P05"]);

/** Sort a driver error: unreachable database, a transaction worth running again, or anything else. */
export function classifyPgError(error: unknown): PgFailure {
  if (typeof error !== "object" || error === null) return "other";
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string") {
    if (code === "40001" || code === "40P01") return "retry";
    if (UNAVAILABLE_SQLSTATES.has(code) || code.startsWith("08")) return "unavailable";
    if (UNAVAILABLE_NODE_CODES.has(code)) return "unavailable";
  }
  const message = error instanceof Error ? error.message : "";
  if (
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|not queryable/i.test(
      message,
    )
  ) {
    return "unavailable";
  }
  return "other";
}
