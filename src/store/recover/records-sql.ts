// SQL-level salvage of `records`. A WITHOUT ROWID table has no rowid ranges to cut in half, so it
// is read in key order: from the start forwards and from the end backwards, each until the damage,
// and then from each key known to lie past a damaged part (seen on a page, or listed by the index
// on session_id), so that SQL's word covers all but the damaged spans. The index on session_id is
// scanned on its own: it tells which session-bound records existed.
import type Database from "better-sqlite3";
import { compareKeys, KeyRanges } from "./key-ranges.js";
import {
  narrowInt,
  RECORD_COLUMNS,
  type RecordKey,
  recordId,
  type SalvagedRecord,
  type SqlValue,
  toRecord,
} from "./row-shapes.js";

export interface RecordsSql {
  /** The table could be queried (or the store predates it, and it holds nothing). */
  usable: boolean;
  problem: string | null;
  rows: Map<string, SalvagedRecord>;
  /** Key spans read without an error: records SQL did not return there do not exist. */
  covered: KeyRanges;
  /** The table was read from end to end. */
  complete: boolean;
  /** Keys the index on session_id lists: session-bound records that existed. */
  indexKeys: Map<string, RecordKey>;
  /** That index was read from end to end. */
  indexComplete: boolean;
  /** Rows SQL returned that are not shaped as Tenax writes them (a key that is not text, say). */
  unrecognised: number;
}

/** The schema version that created `records` (migrations.ts); an older store has none. */
const RECORDS_SINCE_VERSION = 3;

/** Seeks past damaged spans, at most: each is one query, and a damaged span may swallow many. */
const MAX_SEEKS = 256;

export function emptyRecordsSql(problem: string | null): RecordsSql {
  return {
    usable: false,
    problem,
    rows: new Map(),
    covered: new KeyRanges(),
    complete: false,
    indexKeys: new Map(),
    indexComplete: false,
    unrecognised: 0,
  };
}

const COLUMNS = RECORD_COLUMNS.map((c) => `"${c}"`).join(", ");

/**
 * Read `records` from the open working copy. `hints` are keys known from elsewhere (the pages),
 * from which reading resumes past a damaged span.
 */
export function salvageRecordsSql(
  db: Database.Database,
  hints: readonly RecordKey[],
  run: { queries: number },
): RecordsSql {
  let statements: ReturnType<typeof prepare>;
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'records'").get();
    if (exists === undefined) {
      if ((db.pragma("user_version", { simple: true }) as number) >= RECORDS_SINCE_VERSION)
        return emptyRecordsSql("the table records is missing from the schema");
      const none = emptyRecordsSql(null);
      none.usable = true;
      none.complete = true;
      none.covered.add(null, null);
      return none;
    }
    statements = prepare(db);
  } catch (error) {
    return emptyRecordsSql(`the table records cannot be queried: ${(error as Error).message}`);
  }
  const t = emptyRecordsSql(null);
  t.usable = true;
  readIndex(db, t, run);

  /** Read rows in order until the end or the damage; the span read is SQL's to vouch for. */
  const scan = (rows: () => Iterable<unknown>, from: RecordKey | null, backwards: boolean): void => {
    run.queries++;
    let last: RecordKey | null = null;
    try {
      for (const raw of rows()) {
        const values = (raw as unknown[]).map((v) => (typeof v === "bigint" ? narrowInt(v) : v) as SqlValue);
        const record = toRecord(values);
        if (record === null) t.unrecognised++;
        else {
          t.rows.set(record.id, record);
          last = record;
        }
      }
      if (backwards) t.covered.add(null, from);
      else t.covered.add(from, null);
    } catch {
      if (last !== null) {
        if (backwards) t.covered.add(last, from);
        else t.covered.add(from, last);
      }
    }
  };
  const s = statements;
  scan(() => s.forward.iterate(), null, false);
  if (!t.covered.complete) scan(() => s.backward.iterate(), null, true);
  if (!t.covered.complete) {
    const starts = [...hints, ...t.indexKeys.values()].sort(compareKeys);
    let seeks = 0;
    for (const key of starts) {
      if (seeks >= MAX_SEEKS) break;
      if (t.covered.has(key)) continue;
      seeks++;
      scan(() => s.from.iterate(key.kind, key.key), { kind: key.kind, key: key.key }, false);
    }
  }
  t.complete = t.covered.complete;
  return t;
}

function prepare(db: Database.Database) {
  const select = `SELECT ${COLUMNS} FROM records`;
  const stmt = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
  return {
    forward: stmt(`${select} ORDER BY kind, key`),
    backward: stmt(`${select} ORDER BY kind DESC, key DESC`),
    from: stmt(`${select} WHERE (kind, key) >= (?, ?) ORDER BY kind, key`),
  };
}

/** The keys in the index on session_id: forwards, and if that breaks, backwards too. */
function readIndex(db: Database.Database, t: RecordsSql, run: { queries: number }): void {
  const lookup = "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = 'records_session'";
  try {
    if (db.prepare(lookup).get() === undefined) return;
  } catch {
    return; // without the index, nothing says which session-bound records existed
  }
  for (const order of ["", " DESC"]) {
    run.queries++;
    try {
      const sql = `SELECT kind, key FROM records INDEXED BY records_session WHERE session_id IS NOT NULL ORDER BY session_id${order}`;
      for (const raw of db.prepare(sql).raw(true).iterate()) {
        const [kind, key] = raw as unknown[];
        if (typeof kind === "string" && typeof key === "string")
          t.indexKeys.set(recordId(kind, key), { kind, key });
      }
      t.indexComplete = true;
      return;
    } catch {
      // Keep what the scan produced before the damage; the other direction reads from the far end.
    }
  }
}
