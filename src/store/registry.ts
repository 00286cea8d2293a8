// Every caller in a process gets the same writable store for a given profile: one writer (a SQLite
// connection, or a PostgreSQL pool) per store per process. Readers are separate and read-only.
// `openProfileStore` and `openProfileReader` open the engine the profile's config names (store.engine);
// `openStore` and `openReader` are SQLite's own, for what only that engine has (integrity checks,
// salvage, the search index's rebuild).

import { existsSync, realpathSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { loadCode } from "../core/load-code.js";
import type { ProfilePaths } from "../profile/paths.js";
import { StoreOpenError } from "./errors.js";
import type { StoreEngineName, StorePort, StoreReads } from "./port.js";
import { urlWithoutPassword } from "./postgres/pg-url.js";
import type { PostgresStore } from "./postgres/postgres-store.js";
import { Store, type StoreOptions } from "./store.js";
import { StoreReader } from "./store-reader.js";

/** Which engine holds the profile's store and how it is reached (config `store`). */
export interface EngineSettings {
  engine?: StoreEngineName;
  /** engine postgres: the database's URL. */
  url?: string;
  /** engine postgres: connections the writer's pool may open. */
  poolSize?: number;
}

/** The engine settings of config's `store` section (given structurally: the store is below config). */
export function engineOf(store: {
  engine: StoreEngineName;
  url?: string;
  pool_size?: number;
}): EngineSettings {
  return { engine: store.engine, url: store.url, poolSize: store.pool_size };
}

export type StoreSettings = Omit<StoreOptions, "path" | "searchPath" | "spoolDir" | "profile"> &
  EngineSettings;

/** A read-only view of a profile's store, closed by whoever opened it. */
export type ProfileReader = StoreReads & { close(): void };

interface Entry {
  store: Promise<StorePort>;
  profile: string;
  refs: number;
}

const writers = new Map<string, Entry>();
/** Each opened store's key in `writers`, so releasing one finds its entry without awaiting the others. */
const keys = new WeakMap<StorePort, string>();

function key(path: string): string {
  try {
    return resolve(realpathSync(dirname(path)), path.split("/").pop() ?? path);
  } catch {
    return resolve(path);
  }
}

export function storeOptions(paths: ProfilePaths, settings: StoreSettings = {}): StoreOptions {
  return {
    ...settings,
    path: paths.state,
    searchPath: paths.search,
    spoolDir: paths.spool,
    profile: paths.name,
  };
}

/** The process's writable SQLite store for this profile; release it with releaseStore when done. */
export async function openStore(paths: ProfilePaths, settings: StoreSettings = {}): Promise<Store> {
  return (await shared(key(paths.state), paths, () => Store.open(storeOptions(paths, settings)))) as Store;
}

/**
 * The process's writable store for this profile on the engine its config names: state.db, or the
 * PostgreSQL database at `settings.url` (state.db is then never opened or created).
 */
export async function openProfileStore(
  paths: ProfilePaths,
  settings: StoreSettings = {},
): Promise<StorePort> {
  if (settings.engine !== "postgres") return openStore(paths, settings);
  const url = postgresUrl(settings);
  return shared(`postgres ${urlWithoutPassword(url)}`, paths, async () =>
    (await postgresEngine()).openPostgresStore({
      url,
      profile: paths.name,
      spoolDir: paths.spool,
      redactor: settings.redactor,
      deps: settings.deps,
      poolMax: settings.poolSize,
    }),
  );
}

/** The PostgreSQL engine and the pg package, loaded only by a profile that uses them. */
export function postgresEngine(): Promise<typeof import("./postgres/open-postgres.js")> {
  return loadCode("the PostgreSQL store engine", () => import("./postgres/open-postgres.js"));
}

function postgresUrl(settings: EngineSettings): string {
  if (settings.url === undefined)
    throw new StoreOpenError("store_no_url", "store.engine is postgres but store.url is not set", {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the config value as the user writes it
      hint: 'set store.url in config.yaml, e.g. url: "${TENAX_DATABASE_URL}" with the URL in .env',
    });
  return settings.url;
}

/** One writer per store per process, shared by reference count. */
function shared(k: string, paths: ProfilePaths, open: () => Promise<StorePort>): Promise<StorePort> {
  const existing = writers.get(k);
  if (existing) {
    if (existing.profile !== paths.name) {
      throw new StoreOpenError(
        "store_wrong_profile",
        `${k.startsWith("postgres ") ? k.slice(9) : paths.state} is already open in this process as the store of profile '${existing.profile}'`,
      );
    }
    existing.refs++;
    return existing.store;
  }
  const entry: Entry = {
    store: open().then((store) => {
      keys.set(store, k);
      return store;
    }),
    profile: paths.name,
    refs: 1,
  };
  writers.set(k, entry);
  entry.store.catch(() => writers.delete(k));
  return entry.store;
}

/** Drop one reference; the connection (or pool) closes when the last user releases it. */
export async function releaseStore(store: StorePort): Promise<void> {
  const k = keys.get(store);
  const entry = k === undefined ? undefined : writers.get(k);
  if (k === undefined || entry === undefined) return;
  entry.refs--;
  if (entry.refs > 0) return;
  writers.delete(k);
  keys.delete(store);
  if (store instanceof Store) store.close();
  else await (store as PostgresStore).shutdown();
}

/**
 * A read-only view of the profile's store on the engine its config names, for the dashboard, health
 * and read commands; null when a SQLite profile has no state.db yet. On PostgreSQL it is a small
 * pool of its own (a reader never shares the writer's).
 */
export async function openProfileReader(
  paths: ProfilePaths,
  settings: EngineSettings = {},
): Promise<ProfileReader | null> {
  if (settings.engine !== "postgres") return existsSync(paths.state) ? openReader(paths) : null;
  const { openPostgresStore } = await postgresEngine();
  const store = await openPostgresStore({
    url: postgresUrl(settings),
    profile: paths.name,
    spoolDir: paths.spool,
    poolMax: 2,
  });
  return store;
}

/** A read-only view of state.db, for the dashboard and read commands. */
export function openReader(paths: ProfilePaths): StoreReader {
  const o = storeOptions(paths);
  return new StoreReader({
    path: o.path,
    searchPath: o.searchPath,
    spoolDir: o.spoolDir,
    profile: o.profile,
  });
}
