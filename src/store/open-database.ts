// Opening state.db: check that the file is a SQLite database, that it is a Tenax store of this
// profile and of a schema this Tenax knows, then set WAL and the durability level.
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { shellQuote } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { classifySqliteError, StoreCorruptError, StoreDiskFullError, StoreOpenError } from "./errors.js";
import { APPLICATION_ID, migrate, READABLE_FROM_VERSION, SCHEMA_VERSION } from "./migrations.js";
import { createPrivateFile } from "./private-file.js";

export type Synchronous = "full" | "normal";

export interface OpenDatabaseOptions {
  readonly: boolean;
  /** The profile this store must belong to. */
  profile: string;
  synchronous?: Synchronous;
  busyTimeoutMs?: number;
}

const SQLITE_MAGIC = "SQLite format 3\0";

/** The command that salvages a damaged store, as the user must type it. */
export function recoverCommand(path: string, profile: string): string {
  return tenaxCommand(profile, ["sessions", "recover", "--source", path, "--inspect-only"]);
}

/** The same failure, as the store's typed error, whatever SQLite call met it. */
export function corruptStoreError(path: string, profile: string, error: unknown): StoreCorruptError {
  return new StoreCorruptError(`${path} is damaged: ${(error as Error).message}`, path, null, {
    cause: error,
    hint: `see what can be salvaged: ${recoverCommand(path, profile)}`,
  });
}

function readHeader(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(100);
    const n = readSync(fd, buf, 0, 100, 0);
    return buf.subarray(0, n);
  } finally {
    closeSync(fd);
  }
}

export function openDatabase(path: string, options: OpenDatabaseOptions): Database.Database {
  const exists = existsSync(path) && statSync(path).size > 0;
  if (!exists && options.readonly) {
    throw new StoreOpenError("store_missing", `no session store at ${path} yet`, {
      hint: "it is created the first time Tenax stores a session in this profile",
    });
  }
  if (exists) {
    const header = readHeader(path);
    if (header.length < 100 || header.subarray(0, 16).toString("latin1") !== SQLITE_MAGIC) {
      throw new StoreCorruptError(
        `${path} is not a SQLite database (its header is damaged or it is another file)`,
        path,
        null,
        {
          hint: `see what can be salvaged: ${recoverCommand(path, options.profile)}`,
        },
      );
    }
    const appId = header.readUInt32BE(68);
    if (appId !== 0 && appId !== APPLICATION_ID) {
      throw new StoreOpenError(
        "store_foreign",
        `${path} is a SQLite database of another program, not a Tenax store`,
        {
          hint: "move it out of the profile folder; Tenax creates its own state.db there",
        },
      );
    }
  }

  let db: Database.Database;
  try {
    if (!options.readonly && !exists) createPrivateFile(path);
    db = new Database(path, {
      readonly: options.readonly,
      fileMustExist: options.readonly,
      timeout: options.busyTimeoutMs ?? 5000,
    });
  } catch (error) {
    throw accessError(path, error);
  }
  try {
    const version = db.pragma("user_version", { simple: true }) as number;
    if (version > SCHEMA_VERSION) {
      throw new StoreOpenError(
        "store_too_new",
        `${path} has schema version ${version}, but this Tenax knows versions up to ${SCHEMA_VERSION}: it was written by a newer Tenax`,
        { hint: "upgrade Tenax to the version that wrote this store; this one will not touch it" },
      );
    }
    if (!options.readonly) {
      db.pragma("journal_mode = WAL");
      db.pragma(`synchronous = ${options.synchronous === "normal" ? "NORMAL" : "FULL"}`);
      if (version === 0 && hasForeignTables(db)) {
        throw new StoreOpenError(
          "store_foreign",
          `${path} holds tables of another program, not a Tenax store`,
          {
            hint: "move it out of the profile folder; Tenax creates its own state.db there",
          },
        );
      }
      migrate(db);
    } else if (version < READABLE_FROM_VERSION) {
      throw new StoreOpenError(
        "store_old",
        `${path} has schema version ${version} and must be upgraded by a writer first`,
        {
          hint: `upgrade it by opening it once for writing: ${tenaxCommand(options.profile, ["sessions", "reindex"])}`,
        },
      );
    }
    checkIdentity(db, path, options);
    return db;
  } catch (error) {
    db.close();
    const kind = classifySqliteError(error);
    if (kind === "corrupt") throw corruptStoreError(path, options.profile, error);
    if (kind === "readonly" || kind === "cantopen") throw accessError(path, error);
    if (kind === "io") throw ioError(path, error);
    if (kind === "full")
      throw new StoreDiskFullError(
        "store_disk_full",
        `cannot open the session store ${path}: its disk is full`,
        {
          hint: `free some space on that disk (df -h ${dirname(path)}), then retry`,
          data: { path },
        },
      );
    throw error;
  }
}

/** The disk failed a read or write while opening (EIO): say so, with the file, not a bare SqliteError. */
function ioError(path: string, error: unknown): StoreOpenError {
  const code = (error as { code?: string }).code ?? "SQLITE_IOERR";
  return new StoreOpenError(
    "store_io",
    `cannot open the session store ${path}: the disk failed an operation on it (${code}: ${(error as Error).message})`,
    { hint: `check the disk holding ${dirname(path)} (dmesg, df -h), then retry`, cause: error },
  );
}

/**
 * This user may not use the store's files. SQLite needs to write the folder, the -wal and the
 * -shm even to read a WAL database, so say whose files they are and how to look.
 */
function accessError(path: string, error: unknown): StoreOpenError {
  const dir = dirname(path);
  const uid = process.getuid?.();
  let owner = "";
  try {
    const st = statSync(existsSync(path) ? path : dir);
    if (uid !== undefined && st.uid !== uid)
      owner = ` (the files belong to uid ${st.uid}; this is uid ${uid})`;
  } catch {
    // the folder itself is missing: the message below says so
  }
  return new StoreOpenError(
    "store_access",
    `cannot use the session store ${path}: ${(error as Error).message}${owner}`,
    {
      cause: error,
      hint: `run Tenax as the user that owns the profile, or give this user read and write access to the folder and its state.db* files (look with: ls -la ${shellQuote(dir)})`,
    },
  );
}

/**
 * Tables but no schema version: another program's database. Both are read in one snapshot, since
 * another process may be migrating this new store right now (cron ticks on a fresh profile): read
 * apart, its tables could show up after the version was read as 0.
 */
function hasForeignTables(db: Database.Database): boolean {
  return db.transaction(
    () =>
      (db.pragma("user_version", { simple: true }) as number) === 0 &&
      (db.prepare("SELECT count(*) FROM sqlite_schema").pluck().get() as number) > 0,
  )();
}

function checkIdentity(db: Database.Database, path: string, options: OpenDatabaseOptions): void {
  const read = (key: string) =>
    db.prepare("SELECT value FROM meta WHERE key = ?").pluck().get(key) as string | undefined;
  const row = read("profile");
  if (!options.readonly && (row === undefined || read("store_id") === undefined)) {
    // First open: stamp whose store this is, and an id that ties search.db to this file.
    db.prepare(
      "INSERT OR IGNORE INTO meta (key, value) VALUES ('profile', ?), ('created_at', ?), ('store_id', ?)",
    ).run(options.profile, String(Date.now()), newId("st_"));
  }
  if (row === undefined) return;
  if (row !== options.profile) {
    throw new StoreOpenError(
      "store_wrong_profile",
      `${path} is the session store of profile '${row}', not of profile '${options.profile}'`,
      {
        hint: `it was copied or moved here from profile '${row}': move it back to that profile's folder (a new profile starts with no state.db and creates its own)`,
      },
    );
  }
}
