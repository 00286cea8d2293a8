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
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import { tenaxCommand } from "../../config/command-hint.js";
import { readGatewayPid } from "../../config/gateway-pid.js";
import type { ProfilePaths } from "../../config/paths.js";
import { TenaxError, UsageError } from "../../core/errors.js";
import { classifySqliteError } from "../errors.js";
import { checkIntegrity, type IntegrityResult } from "../integrity.js";
import { openDatabase } from "../open-database.js";
import { storeOptions } from "../registry.js";
import type { SpoolRecord } from "../spool.js";
import { Store } from "../store.js";
import { makeStampedDir } from "./forensic-copy.js";

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
  spool: {
    /** Spool files the recovery had folded in, now under spool/replayed/. */
    moved: string[];
    /** Spool files (or parts of them) written after the recovery, replayed into the restored store. */
    replayed_files: string[];
    records: number;
    ops: number;
    messages: number;
    duplicates: number;
    failed: { file: string; reason: string }[];
  };
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

/** Refuse while a gateway runs or any connection holds state.db open. */
function checkNotInUse(paths: ProfilePaths): void {
  const stop = tenaxCommand(paths.name, ["gateway", "stop"]);
  const gateway = readGatewayPid(paths.pid);
  if (gateway.running) {
    throw new RestoreError(
      "restore_in_use",
      `the gateway of profile ${paths.name} is running (pid ${gateway.pid})`,
      {
        hint: `stop it first: ${stop}`,
      },
    );
  }
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
        hint: `stop every Tenax process of this profile (${stop}, and any running chat), then retry`,
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
  checkUnchanged(paths, meta, options.force === true);
  checkNotInUse(paths);

  const replacedDir = makeStampedDir(paths.forensics, now(), "replaced");
  const files: string[] = [];
  // The old state.db stays reachable under forensics through a hard link (or a copy) while the new
  // file is renamed over it; its WAL and wal-index must go first, or SQLite would lay the old WAL
  // over the new file.
  if (existsSync(paths.state)) {
    const keep = join(replacedDir, basename(paths.state));
    try {
      linkSync(paths.state, keep);
    } catch {
      copyFileSync(paths.state, keep);
    }
    files.push(keep);
  }
  files.push(...moveAside([`${paths.state}-wal`, `${paths.state}-shm`], replacedDir));
  placeFile(from, paths.state);
  files.push(...moveAside([paths.search, `${paths.search}-wal`, `${paths.search}-shm`], replacedDir));
  fsyncPath(replacedDir);

  const spool = await replaySpool(paths, meta);
  return { from, restored_to: paths.state, integrity, replaced: { dir: replacedDir, files }, spool };
}

/** Records of a spool file from byte `start` on, validated as readSpool does. */
function recordsFrom(file: string, start: number): { records: SpoolRecord[]; bad: number } {
  const fd = openSync(file, "r");
  let text: string;
  try {
    const size = statSync(file).size;
    const buf = Buffer.alloc(Math.max(0, size - start));
    readSync(fd, buf, 0, buf.length, start);
    text = buf.toString("utf8");
  } finally {
    closeSync(fd);
  }
  const records: SpoolRecord[] = [];
  let bad = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const record = JSON.parse(line) as SpoolRecord;
      if (record.v !== 1 || !Array.isArray(record.ops)) throw new Error("not a spool record");
      records.push(record);
    } catch {
      bad++;
    }
  }
  return { records, bad };
}

async function replaySpool(paths: ProfilePaths, meta: Map<string, string>): Promise<RestoreReport["spool"]> {
  const folded = new Set(JSON.parse(meta.get("recovered_spool_files") ?? "[]") as string[]);
  const bytes = JSON.parse(meta.get("recovered_spool_bytes") ?? "{}") as Record<string, number>;
  const result: RestoreReport["spool"] = {
    moved: [],
    replayed_files: [],
    records: 0,
    ops: 0,
    messages: 0,
    duplicates: 0,
    failed: [],
  };
  if (!existsSync(paths.spool)) return result;
  const names = readdirSync(paths.spool)
    .filter((f) => f.endsWith(".jsonl"))
    .sort();
  const done = join(paths.spool, "replayed");
  const toMove: string[] = [];
  const pending: { name: string; records: SpoolRecord[] }[] = [];
  for (const name of names) {
    const start = folded.has(name) ? (bytes[name] ?? Number.MAX_SAFE_INTEGER) : 0;
    const { records } = recordsFrom(join(paths.spool, name), start);
    const mine = records.filter((r) => r.profile === paths.name);
    if (folded.has(name)) result.moved.push(name);
    if (mine.length > 0) pending.push({ name, records: mine });
    else if (folded.has(name)) toMove.push(name);
  }
  if (pending.length > 0) {
    const store = await Store.open(storeOptions(paths, { integrityCheckTimeoutMs: 0 }));
    try {
      for (const { name, records } of pending) {
        try {
          const r = await store.replay(records);
          result.records += records.length;
          result.ops += r.ops;
          result.messages += r.messages;
          result.duplicates += r.duplicates;
          result.replayed_files.push(name);
          toMove.push(name);
        } catch (error) {
          result.failed.push({ file: name, reason: (error as Error).message });
        }
      }
    } finally {
      store.close();
    }
  }
  mkdirSync(done, { recursive: true, mode: 0o700 });
  for (const name of toMove) {
    let target = join(done, name);
    for (let i = 2; existsSync(target); i++) target = join(done, `${name}.${i}`);
    renameSync(join(paths.spool, name), target);
  }
  fsyncPath(done);
  fsyncPath(paths.spool);
  return result;
}
