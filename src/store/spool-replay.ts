// Replaying the spool into a store that takes writes again: the writes an unreachable PostgreSQL
// refused (and those whose commit reply was lost) are folded into it by `tenax store replay`.
//
// Invariants:
// - Spool files are never moved or rewritten: a running gateway may append to one at any moment.
//   What was replayed is a byte offset per file in `replayed.json` (replaced atomically), and only
//   whole lines (ending in a newline) are ever read, so a line being written is left for next time.
// - Replay is idempotent: a message already stored (same uid) is skipped, records keep the newest
//   `updated_at`; running it twice, or after a crash halfway, stores nothing twice.
// - Only this profile's records for this store (its URL without the password) are replayed; others
//   (spooled when the profile was on SQLite, another database) are counted and left alone.
// - A spooled write of a turn another process took over since (its lease epoch moved on) is refused
//   by the store's fence (lease-fence.ts): its fenced ops are left out and counted as `fenced`, the
//   rest of its record goes in.
// - A refused write of a turn that ended meanwhile is left out (the turn went on without it); a turn
//   the replay writes to that is still running with nobody renewing its lease is settled as failed,
//   never resumed: its client was told the store refused it and may have sent it again.
// - One replay at a time per spool folder (`replay.lock`, taken over from a process that died).
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { ownerGone, ownerOf } from "../core/process-owner.js";
import { StoreError } from "./errors.js";
import { isLeaseLost, leaseClaimOf, leaseLostDetail } from "./lease-fence.js";
import type { WriteOp } from "./ops.js";
import type { StorePort } from "./port.js";
import type { SpoolRecord } from "./spool.js";

const PROGRESS = "replayed.json";
const EMPTY = { records: 0, ops: 0, messages: 0, duplicates: 0, superseded: 0, fenced: 0, foreign: 0 };
const LOCK = "replay.lock";

/** Bytes of each spool file (by name) already replayed. */
type Progress = Record<string, number>;

export interface PendingRecord {
  file: string;
  /** The offset just past this record's line. */
  end: number;
  record: SpoolRecord;
}

export interface PendingSpool {
  records: PendingRecord[];
  /** Per file, the offset past its last whole line: where the next replay starts once this one is done. */
  ends: Progress;
  /** Records of another profile or another store, never replayed here. */
  foreign: number;
  /** Whole lines that are not records. */
  unreadable: { file: string; offset: number }[];
}

export interface ReplayReport {
  records: number;
  ops: number;
  messages: number;
  duplicates: number;
  /** Ops of turns that ended meanwhile, left out (see LiveTurns). */
  superseded: number;
  /** Ops of turns another process took over since they were spooled, refused by their lease epoch. */
  fenced: number;
  /** Turns the replay left running with nobody to run them, settled as failed. */
  settled: string[];
  foreign: number;
  unreadable: { file: string; offset: number }[];
}

function readProgress(dir: string): Progress {
  const file = join(dir, PROGRESS);
  if (!existsSync(file)) return {};
  try {
    const parsed = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return typeof parsed === "object" && parsed !== null ? (parsed as Progress) : {};
  } catch {
    throw new StoreError("store_spool_progress", `${file} is not readable JSON`, {
      hint: `it records how much of each spool file was replayed; move it aside to replay everything again (replay is idempotent: nothing is stored twice)`,
    });
  }
}

function writeProgress(dir: string, progress: Progress): void {
  const file = join(dir, PROGRESS);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(progress, null, 2)}\n`, { mode: 0o600 });
  const fd = openSync(tmp, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dirFd = openSync(dir, "r");
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/** The whole lines of `file` from byte `start` on, each with the offset just past it. */
function linesFrom(file: string, start: number): { line: string; offset: number; end: number }[] {
  const size = statSync(file).size;
  if (size <= start) return [];
  const buf = Buffer.alloc(size - start);
  const fd = openSync(file, "r");
  try {
    readSync(fd, buf, 0, buf.length, start);
  } finally {
    closeSync(fd);
  }
  const out: { line: string; offset: number; end: number }[] = [];
  let from = 0;
  for (let nl = buf.indexOf(10, from); nl >= 0; nl = buf.indexOf(10, from)) {
    out.push({ line: buf.toString("utf8", from, nl), offset: start + from, end: start + nl + 1 });
    from = nl + 1;
  }
  return out;
}

/** What of the spool is still to replay into the store at `where` for `profile`. */
export function pendingSpool(dir: string, profile: string, where: string): PendingSpool {
  const result: PendingSpool = { records: [], ends: {}, foreign: 0, unreadable: [] };
  if (!existsSync(dir)) return result;
  const progress = readProgress(dir);
  const names = readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort();
  for (const name of names) {
    for (const { line, offset, end } of linesFrom(join(dir, name), progress[name] ?? 0)) {
      result.ends[name] = end;
      if (line.trim() === "") continue;
      let record: SpoolRecord;
      try {
        record = JSON.parse(line) as SpoolRecord;
        if (record.v !== 1 || !Array.isArray(record.ops)) throw new Error("not a spool record");
      } catch {
        result.unreadable.push({ file: join(dir, name), offset });
        continue;
      }
      if (record.profile !== profile || record.store !== where) result.foreign++;
      else result.records.push({ file: name, end, record });
    }
  }
  return result;
}

/** Take the folder's replay lock, or say who holds it. */
function lock(dir: string): () => void {
  const file = join(dir, LOCK);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, ownerOf(), { flag: "wx", mode: 0o600 });
      return () => unlinkSync(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = readFileSync(file, "utf8").trim();
      if (!ownerGone(holder))
        throw new StoreError("store_replay_running", `another replay of ${dir} runs (${holder})`, {
          hint: "wait for it to finish; replay is idempotent, so running it again afterwards stores nothing twice",
        });
      unlinkSync(file); // left by a replay that died
    }
  }
  throw new StoreError("store_replay_running", `could not take ${file}`);
}

/**
 * Fold the pending spool into `store`, record by record, saving progress after each. A write the
 * store refuses stops the replay there (what came before stays replayed).
 */
export async function replaySpool(
  store: StorePort,
  dir: string,
  profile: string,
  now: () => number,
): Promise<ReplayReport> {
  if (!existsSync(dir)) return { ...EMPTY, settled: [], unreadable: [] };
  const unlock = lock(dir);
  try {
    const pending = pendingSpool(dir, profile, store.where);
    const report: ReplayReport = {
      records: 0,
      ops: 0,
      messages: 0,
      duplicates: 0,
      superseded: 0,
      fenced: 0,
      settled: [],
      foreign: pending.foreign,
      unreadable: pending.unreadable,
    };
    const progress = readProgress(dir);
    const turns = new LiveTurns(store, new Set((await store.runningTurns()).map((t) => t.id)), now);
    for (const { file, end, record } of pending.records) {
      const { ops, skipped } = await turns.filter(record.ops);
      report.superseded += skipped;
      await replayFenced(store, { ...record, ops }, report);
      report.records++;
      progress[file] = end;
      writeProgress(dir, progress);
    }
    // Every record is in: lines left alone (another store's, unreadable) are reported once, not again.
    Object.assign(progress, pending.ends);
    writeProgress(dir, progress);
    report.settled = [...turns.created, ...(await settleOrphans(store, turns.touched, now()))];
    return report;
  } finally {
    unlock();
  }
}

/**
 * Which turns a spooled op may still change: one running now, or one this replay creates. A turn
 * that ended meanwhile went on without the refused write (the watchdog resumed it, or it failed and
 * its client was told): replaying its messages would put a second answer into a finished turn.
 */
class LiveTurns {
  /** Live turns the replay wrote to, by id, with their session. */
  readonly touched = new Map<string, string>();
  /** Turns the replay created, failed in the same write (their start was refused: nobody ran them). */
  readonly created = new Set<string>();

  constructor(
    private readonly store: StorePort,
    private readonly live: Set<string>,
    private readonly now: () => number,
  ) {}

  /** The ops to replay (with a created turn's failure added), and how many were left out. */
  async filter(ops: WriteOp[]): Promise<{ ops: WriteOp[]; skipped: number }> {
    const kept: WriteOp[] = [];
    let skipped = 0;
    for (const op of ops) {
      if (!(await this.keeps(op))) {
        skipped++;
        continue;
      }
      kept.push(op);
      if (op.op === "turn.start" && this.created.has(op.id)) kept.push(failedOp(op.id, this.now()));
    }
    return { ops: kept, skipped };
  }

  private async keeps(op: WriteOp): Promise<boolean> {
    if (op.op === "turn.start") {
      const existing = (await this.store.getTurns(op.session_id)).find((t) => t.id === op.id);
      if (existing === undefined) {
        // Created and failed in one write, so no crash of the replay can leave it running for a
        // watchdog to resume; later refused writes of it in this replay still go in.
        this.created.add(op.id);
        this.live.add(op.id);
        return true;
      }
      if (existing.status !== "running") return false;
      this.touched.set(op.id, op.session_id);
      return true;
    }
    if (op.op !== "turn.update" && (op.op !== "message.append" || op.turn_id === null)) return true;
    const id = op.op === "turn.update" ? op.id : op.turn_id;
    if (id === null || !this.live.has(id)) return false;
    // A refused status change must not reopen a turn the replay failed.
    if (op.op === "turn.update" && this.created.has(id)) return false;
    if (op.op === "message.append" && !this.created.has(id)) this.touched.set(id, op.session_id);
    return true;
  }
}

/**
 * Replay one record; when the fence refuses it (a turn taken over since), again without that turn's
 * fenced ops, until it goes in or nothing is left of it.
 */
async function replayFenced(store: StorePort, record: SpoolRecord, report: ReplayReport): Promise<void> {
  let ops = record.ops;
  while (ops.length > 0) {
    try {
      const r = await store.replay([{ ...record, ops }]);
      report.ops += r.ops;
      report.messages += r.messages;
      report.duplicates += r.duplicates;
      return;
    } catch (error) {
      if (!isLeaseLost(error)) throw error;
      const lost = leaseLostDetail(error).turn_id;
      const kept = ops.filter((op) => leaseClaimOf(op)?.turnId !== lost);
      // A refusal that names no op of the record is not the fence's to settle here.
      if (kept.length === ops.length) throw error;
      report.fenced += ops.length - kept.length;
      ops = kept;
    }
  }
}

function failedOp(id: string, now: number): WriteOp {
  return {
    op: "turn.update",
    id,
    status: "failed",
    ended_at: now,
    lease_expires_at: null,
    error: "the store refused this turn's writes while it ran; they were replayed from the spool later",
  };
}

/** Running turns the replay wrote to whose lease ran out (nobody renews it): failed, never resumed. */
async function settleOrphans(store: StorePort, touched: Map<string, string>, now: number): Promise<string[]> {
  const settled: string[] = [];
  for (const [id, sessionId] of touched) {
    const turn = (await store.getTurns(sessionId)).find((t) => t.id === id);
    if (turn?.status !== "running") continue;
    if (turn.lease_expires_at !== null && turn.lease_expires_at > now) continue;
    await store.write([failedOp(turn.id, now)]);
    settled.push(turn.id);
  }
  return settled;
}
