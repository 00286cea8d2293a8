// How commands reach a profile's store: read commands through a read-only reader, commands that
// change something through the process's single writer, with the profile's store settings.
import { loadConfig } from "../config/load.js";
import type { TenaxConfig } from "../config/schema.js";
import { UsageError } from "../core/errors.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { RereadMode } from "../store/page-reread.js";
import type { StorePort } from "../store/port.js";
import {
  openProfileReader,
  openProfileStore,
  openStore,
  type ProfileReader,
  releaseStore,
  type StoreSettings,
} from "../store/registry.js";
import type { Store } from "../store/store.js";

export function storeSettings(config: TenaxConfig): StoreSettings {
  return {
    engine: config.store.engine,
    url: config.store.url,
    poolSize: config.store.pool_size,
    synchronous: config.store.synchronous,
    busyTimeoutMs: config.store.busy_timeout_ms,
    writeRetryBudgetMs: config.store.write_retry_budget_ms,
    integrityCheckTimeoutMs: config.store.integrity_check_timeout_ms,
    // A diagnostic, not a setting: TENAX_STORE_SYNC=inline syncs each commit on the event loop as
    // SQLite's synchronous=FULL does (the slow-disk benchmark compares the two).
    syncOffLoop: process.env.TENAX_STORE_SYNC !== "inline",
    // Also a diagnostic: TENAX_STORE_REREAD=off keeps cached pages across writes, so damage to the
    // file under a running process is no longer caught by the next write; =always re-reads before
    // every commit, as the store did before page-reread.ts (the benchmarks compare them).
    rereadPagesOnWrite: rereadMode(process.env.TENAX_STORE_REREAD),
  };
}

/** Run with a read-only view of the profile's store, on its engine; `null` when it has none yet. */
export async function withReader<T>(
  paths: ProfilePaths,
  body: (reader: ProfileReader | null) => T | Promise<T>,
): Promise<T> {
  const reader = await openProfileReader(paths, storeSettings(loadConfig(paths).config));
  if (reader === null) return body(null);
  try {
    return await body(reader);
  } finally {
    reader.close();
  }
}

/** Run with the process's writer of the profile's store, on its engine. */
export async function withWriter<T>(
  paths: ProfilePaths,
  body: (store: StorePort) => T | Promise<T>,
  settings: Partial<StoreSettings> = {},
): Promise<T> {
  const { config } = loadConfig(paths);
  const store = await openProfileStore(paths, { ...storeSettings(config), ...settings });
  try {
    return await body(store);
  } finally {
    await releaseStore(store);
  }
}

/** The profile's config, once it is known to keep its store in SQLite; `what` is refused otherwise. */
export function requireSqlite(paths: ProfilePaths, what: string): TenaxConfig {
  const { config } = loadConfig(paths);
  if (config.store.engine === "postgres")
    throw new UsageError(`${what} is for a SQLite store, and this profile's store is in PostgreSQL`, {
      hint: "PostgreSQL keeps its own checks and indexes: see the database's logs, or pg_amcheck for damage",
    });
  return config;
}

/**
 * Run with the SQLite store itself, for what only that engine has (its page check, its search
 * index, salvage); a profile on PostgreSQL is told that `what` is SQLite's and what applies there.
 */
export async function withSqliteWriter<T>(
  paths: ProfilePaths,
  what: string,
  body: (store: Store) => T | Promise<T>,
  settings: Partial<StoreSettings> = {},
): Promise<T> {
  const config = requireSqlite(paths, what);
  const store = await openStore(paths, { ...storeSettings(config), ...settings });
  try {
    return await body(store);
  } finally {
    await releaseStore(store);
  }
}

function rereadMode(value: string | undefined): RereadMode {
  return value === "off" || value === "always" ? value : "changed";
}
