// Every caller in a process gets the same writable Store for a given state.db: one writer
// connection per store per process. Readers are separate, read-only, and cheap to open.
import { realpathSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { ProfilePaths } from "../profile/paths.js";
import { StoreOpenError } from "./errors.js";
import { Store, type StoreOptions } from "./store.js";
import { StoreReader } from "./store-reader.js";

export type StoreSettings = Omit<StoreOptions, "path" | "searchPath" | "spoolDir" | "profile">;

interface Entry {
  store: Promise<Store>;
  profile: string;
  refs: number;
}

const writers = new Map<string, Entry>();

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

/** The process's writable store for this profile; release it with releaseStore when done. */
export async function openStore(paths: ProfilePaths, settings: StoreSettings = {}): Promise<Store> {
  const k = key(paths.state);
  const existing = writers.get(k);
  if (existing) {
    if (existing.profile !== paths.name) {
      throw new StoreOpenError(
        "store_wrong_profile",
        `${paths.state} is already open in this process as the store of profile '${existing.profile}'`,
      );
    }
    existing.refs++;
    return existing.store;
  }
  const entry: Entry = { store: Store.open(storeOptions(paths, settings)), profile: paths.name, refs: 1 };
  writers.set(k, entry);
  entry.store.catch(() => writers.delete(k));
  return entry.store;
}

/** Drop one reference; the connection closes when the last user releases it. */
export async function releaseStore(store: Store): Promise<void> {
  const k = key(store.location.path);
  const entry = writers.get(k);
  if (!entry || (await entry.store) !== store) return;
  entry.refs--;
  if (entry.refs <= 0) {
    writers.delete(k);
    store.close();
  }
}

/** A read-only view for the dashboard and read commands. */
export function openReader(paths: ProfilePaths): StoreReader {
  const o = storeOptions(paths);
  return new StoreReader({
    path: o.path,
    searchPath: o.searchPath,
    spoolDir: o.spoolDir,
    profile: o.profile,
  });
}
