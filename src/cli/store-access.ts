// How commands reach a profile's store: read commands through a read-only reader, commands that
// change something through the process's single writer, with the profile's store settings.
import { existsSync } from "node:fs";
import { loadConfig } from "../config/load.js";
import type { TenaxConfig } from "../config/schema.js";
import { ConfigError } from "../core/errors.js";
import type { ProfilePaths } from "../profile/paths.js";
import { openReader, openStore, releaseStore, type StoreSettings } from "../store/registry.js";
import type { Store } from "../store/store.js";
import type { StoreReader } from "../store/store-reader.js";

export function storeSettings(config: TenaxConfig): StoreSettings {
  // Until the gateway, chat and cron open a profile's store by its engine, a profile set to
  // PostgreSQL is refused here, loudly, rather than run on state.db while the config says otherwise.
  if (config.store.engine === "postgres")
    throw new ConfigError(
      "store.engine is postgres, but this Tenax runs a profile on SQLite only for now: `tenax store copy` fills a PostgreSQL database, and running on it comes next",
      {
        hint: "set store.engine back to sqlite (the default) in config.yaml; the copied database is kept as it is",
      },
    );
  return {
    synchronous: config.store.synchronous,
    busyTimeoutMs: config.store.busy_timeout_ms,
    writeRetryBudgetMs: config.store.write_retry_budget_ms,
    integrityCheckTimeoutMs: config.store.integrity_check_timeout_ms,
    // A diagnostic, not a setting: TENAX_STORE_SYNC=inline syncs each commit on the event loop as
    // SQLite's synchronous=FULL does (the slow-disk benchmark compares the two).
    syncOffLoop: process.env.TENAX_STORE_SYNC !== "inline",
    // Also a diagnostic: TENAX_STORE_REREAD=off keeps cached pages across writes, so damage to the
    // file under a running process is no longer caught by the next write (the gateway benchmark
    // shows what the re-read costs a turn).
    rereadPagesOnWrite: process.env.TENAX_STORE_REREAD !== "off",
  };
}

/** Run with a read-only view; `null` when the profile has no store yet. */
export async function withReader<T>(
  paths: ProfilePaths,
  body: (reader: StoreReader | null) => T | Promise<T>,
): Promise<T> {
  if (!existsSync(paths.state)) return body(null);
  const reader = openReader(paths);
  try {
    return await body(reader);
  } finally {
    reader.close();
  }
}

export async function withWriter<T>(
  paths: ProfilePaths,
  body: (store: Store) => T | Promise<T>,
  settings: Partial<StoreSettings> = {},
): Promise<T> {
  const { config } = loadConfig(paths);
  const store = await openStore(paths, { ...storeSettings(config), ...settings });
  try {
    return await body(store);
  } finally {
    await releaseStore(store);
  }
}
