// The store's typed failures. Each says which file failed and what to do next; the corrupt one also
// says where the write that could not be stored went instead.
import { TenaxError, type TenaxErrorOptions } from "../core/errors.js";

export type SqliteFailure = "corrupt" | "busy" | "full" | "readonly" | "io" | "cantopen" | "other";

/** Sort a better-sqlite3 error by what the store must do about it. */
export function classifySqliteError(error: unknown): SqliteFailure {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return "other";
  if (code.startsWith("SQLITE_CORRUPT") || code === "SQLITE_NOTADB") return "corrupt";
  // A file shorter than SQLite's own record of it (a WAL truncated under a running writer, say):
  // damage, not a passing I/O problem, so it must stop writes and spool like any corruption.
  if (code === "SQLITE_IOERR_SHORT_READ") return "corrupt";
  if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return "busy";
  if (code === "SQLITE_FULL" || code === "SQLITE_IOERR_WRITE_FULL") return "full";
  if (code.startsWith("SQLITE_READONLY") || code === "SQLITE_PERM") return "readonly";
  if (code.startsWith("SQLITE_CANTOPEN")) return "cantopen";
  if (code.startsWith("SQLITE_IOERR")) return "io";
  return "other";
}

/** A sticky failure (damage, a full disk, a failed sync) waits for an operator: retry in half a minute. */
const OPERATOR_WAIT_MS = 30_000;

export interface StoreErrorOptions extends TenaxErrorOptions {
  /** How soon a retry may succeed, when the failure passes by itself (a database coming back, a busy pool). */
  retryAfterMs?: number;
}

export class StoreError extends TenaxError {
  override readonly name: string = "StoreError";
  /** What a client is told to wait (Retry-After) before trying again. */
  readonly retryAfterMs: number;
  constructor(code: string, message: string, options: StoreErrorOptions = {}) {
    const { retryAfterMs, ...rest } = options;
    super(code, message, rest);
    this.retryAfterMs = retryAfterMs ?? OPERATOR_WAIT_MS;
  }
}

/**
 * The store's refusal in `error`, or null when it is another layer's. Told by the brand and the
 * `store_` code every store failure carries, so the layers above never compare codes themselves.
 */
export function storeRefusal(error: unknown): { code: string; retryAfterMs: number } | null {
  if (!TenaxError.isInstance(error) || !error.code.startsWith("store_")) return null;
  const wait = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return { code: error.code, retryAfterMs: typeof wait === "number" ? wait : OPERATOR_WAIT_MS };
}

/** The database file is damaged. Sticky: once raised for a store, every later write raises it too. */
export class StoreCorruptError extends StoreError {
  override readonly name = "StoreCorruptError";
  constructor(
    message: string,
    readonly path: string,
    readonly spooledTo: string | null,
    options: TenaxErrorOptions = {},
  ) {
    super("store_corrupt", message, { ...options, data: { path, spooled_to: spooledTo, ...options.data } });
  }
}

export class StoreBusyError extends StoreError {
  override readonly name = "StoreBusyError";
}

export class StoreDiskFullError extends StoreError {
  override readonly name = "StoreDiskFullError";
}

/** The file is not a Tenax store, belongs to another profile, or comes from a newer Tenax. */
export class StoreOpenError extends StoreError {
  override readonly name = "StoreOpenError";
}

export class SearchUnavailableError extends StoreError {
  override readonly name = "SearchUnavailableError";
}
