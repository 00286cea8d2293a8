// `tenax sessions restore`: put a recovered store in place of a profile's state.db. It checks the
// new file first (a Tenax store of this profile that passes a full integrity check), refuses while
// anything has the current store open, keeps every replaced file under forensics/, swaps the new
// file in atomically, and then replays the spool writes the recovery did not fold in.
import { createHash } from "node:crypto";
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { TenaxError, UsageError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { readGatewayPid } from "../../profile/gateway-pid.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { classifySqliteError } from "../errors.js";
import { checkIntegrity, type IntegrityResult } from "../integrity.js";
import { openDatabase } from "../open-database.js";
import { makeStampedDir } from "./forensic-copy.js";
import { replayNewSpool, type SpoolReplay } from "./restore-spool.js";

export interface RestoreOptions {
  paths: ProfilePaths;
  from: string;
  /** Replace state.db even though it changed since it was recovered. */
  force?: boolean;
  now?: () => number;
}

export interface RestoreReport {
  from: string;
  restored_to: string;
  integrity: IntegrityResult;
  replaced: { dir: string; files: string[] };
  spool: SpoolReplay;
}

export class RestoreError extends TenaxError {
  override readonly name = "RestoreError";
}

/** sha256 of a file; a missing file counts as empty (a WAL that is absent or empty holds nothing). */
function sha256(path: string): string {
  const hash = createHash("sha256");
  if (existsSync(path)) hash.update(readFileSync(path));
  return hash.digest("hex");
}

const EMPTY_SHA256 = createHash("sha256").digest("hex");

function fsyncPath(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The new store must be a healthy Tenax store of this profile; returns its meta table. */
async function checkCandidate(
  from: string,
  paths: ProfilePaths,
): Promise<{ meta: Map<string, string>; integrity: IntegrityResult }> {
  if (!existsSync(from) || !statSync(from).isFile()) throw new UsageError(`no file at ${from}`);
  if (resolve(from) === resolve(paths.state))
    throw new UsageError("--from must be the recovered file, not the profile's state.db");
  // Fold a leftover WAL of the new file into it, so one plain file holds everything we copy.
  if (existsSync(`${from}-wal`) && statSync(`${from}-wal`).size > 0) {
    const db = new Database(from, { fileMustExist: true });
    try {
      db.pragma("wal_checkpoint(TRUNCATE)");
    } finally {
      db.close();
    }
  }
  const db = openDatabase(from, { readonly: true, profile: paths.name });
  let meta: Map<string, string>;
  try {
    const rows = db.prepare("SELECT key, value FROM meta").all() as { key: string; value: string }[];
    meta = new Map(rows.map((r) => [r.key, r.value]));
  } finally {
    db.close();
  }
  if (!meta.has("store_id"))
    throw new RestoreError("restore_not_store", `${from} has no store id: it is not a finished Tenax store`);
  const integrity = await checkIntegrity(from, { mode: "full", timeoutMs: 10 * 60_000 });
  if (integrity.status !== "ok") {
    throw new RestoreError(
      "restore_bad_store",
      `${from} fails its integrity check (${integrity.status}): ${integrity.detail.join("; ")}`,
      {
        hint: "recover again into a new file; this one must not be put in place",
      },
    );
  }
  return { meta, integrity };
}

/** Refuse while any connection holds state.db open: an exclusive write lock must be free at once. */
function checkNotLocked(paths: ProfilePaths): void {
  if (!existsSync(paths.state)) return;
  let db: Database.Database | null = null;
  try {
    db = new Database(paths.state, { fileMustExist: true, timeout: 0 });
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
  } catch (error) {
    // A file too damaged to open cannot be in use by a working store: it does not block the restore.
    if (classifySqliteError(error) === "busy") {
      throw new RestoreError("restore_in_use", `${paths.state} is open in another process`, {
        hint: "stop every Tenax process of this profile (gateway, chat, cron), then retry; to find them: ps aux | grep tenax",
      });
    }
  } finally {
    try {
      db?.close();
    } catch {
      // Closing a damaged file may fail; it is being replaced.
    }
  }
}

/** Has state.db changed since the recovery copied it? Then writes made since then would be lost. */
function checkUnchanged(paths: ProfilePaths, meta: Map<string, string>, force: boolean): void {
  const source = meta.get("recovered_from");
  const digest = meta.get("recovered_source_sha256");
  if (force || source === undefined || digest === undefined || resolve(source) !== resolve(paths.state))
    return;
  const then = JSON.parse(digest) as { db: string | null; wal: string | null };
  if (sha256(paths.state) === then.db && sha256(`${paths.state}-wal`) === (then.wal ?? EMPTY_SHA256)) return;
  throw new RestoreError(
    "restore_source_changed",
    `${paths.state} changed after it was recovered: writes made since then are not in the recovered file`,
    {
      hint: `recover again: ${tenaxCommand(paths.name, ["sessions", "recover", "--source", paths.state, "--inspect-only"])}\n(or pass --force to replace it anyway; the current files are kept under ${paths.forensics})`,
    },
  );
}

/** Move the current files aside: renamed when on the same disk, else copied then removed. */
function moveAside(files: string[], dir: string): string[] {
  const moved: string[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    const target = join(dir, basename(file));
    try {
      renameSync(file, target);
    } catch {
      copyFileSync(file, target);
      rmSync(file);
    }
    moved.push(target);
  }
  return moved;
}

function placeFile(from: string, to: string): void {
  const temp = join(dirname(to), `.${basename(to)}.restore-${process.pid}.tmp`);
  rmSync(temp, { force: true });
  copyFileSync(from, temp);
  fsyncPath(temp);
  renameSync(temp, to);
  fsyncPath(dirname(to));
}

export async function restoreStore(options: RestoreOptions): Promise<RestoreReport> {
  const { paths } = options;
  const now = options.now ?? Date.now;
  const from = resolve(options.from);
  const { meta, integrity } = await checkCandidate(from, paths);
  const gateway = readGatewayPid(paths.pid);
  if (gateway.running) {
    throw new RestoreError(
      "restore_in_use",
      `the gateway of profile ${paths.name} is running (pid ${gateway.pid})`,
      {
        hint: `stop it first (kill ${gateway.pid}), then retry`,
      },
    );
  }
  checkUnchanged(paths, meta, options.force === true);

  // Copy the current files aside byte for byte before the lock probe: a probe that finds the file
  // free closes as its last user, and SQLite then folds the WAL into state.db.
  const replacedDir = makeStampedDir(paths.forensics, now(), "replaced");
  const files: string[] = [];
  for (const file of [paths.state, `${paths.state}-wal`, `${paths.state}-shm`]) {
    if (!existsSync(file)) continue;
    const keep = join(replacedDir, basename(file));
    copyFileSync(file, keep);
    fsyncPath(keep);
    files.push(keep);
  }
  try {
    checkNotLocked(paths);
  } catch (error) {
    rmSync(replacedDir, { recursive: true, force: true });
    throw error;
  }
  // The old WAL and wal-index must go before the new file arrives, or SQLite would lay that WAL
  // over the new file.
  rmSync(`${paths.state}-wal`, { force: true });
  rmSync(`${paths.state}-shm`, { force: true });
  placeFile(from, paths.state);
  files.push(...moveAside([paths.search, `${paths.search}-wal`, `${paths.search}-shm`], replacedDir));
  fsyncPath(replacedDir);

  const spool = await replayNewSpool(paths, meta);
  return { from, restored_to: paths.state, integrity, replaced: { dir: replacedDir, files }, spool };
}
