// SQL-level salvage on the working copy: each table is read in rowid ranges, and a range that fails
// is cut in half until the failing rowids stand alone. Indexes are scanned on their own (forwards
// and backwards) because they often survive damage to the table: they tell which rows existed.
// The table's bounds never rest on max(rowid) alone, which fails when the rightmost leaf is damaged.
// `records`, which has no rowid, is read by key instead (records-sql.ts).
import Database from "better-sqlite3";
import { emptyRecordsSql, type RecordsSql, salvageRecordsSql } from "./records-sql.js";
import {
  missingValue,
  narrowInt,
  type PerRowidTable,
  perRowidTable,
  type RecordKey,
  ROWID_TABLES,
  type RowidTable,
  type SalvagedRow,
  type SqlValue,
  TABLE_COLUMNS,
} from "./row-shapes.js";
import { RowidRanges, SortedRowids } from "./rowid-ranges.js";

export interface TableSql {
  /** The table is in a readable schema with the columns recovery knows. */
  usable: boolean;
  problem: string | null;
  rows: Map<number, SalvagedRow>;
  /** Rowid ranges read without an error: rows SQL did not return there do not exist. */
  covered: RowidRanges;
  /** Single rowids that could not be read. */
  failed: number[];
  indexRowids: Set<number>;
  /** An index was read from end to end: its rowids are every row the table held. */
  indexComplete: boolean;
  /** The table's highest rowid is known (max(rowid) worked, or a probe above it came back empty). */
  bounded: boolean;
}

export interface SqlSalvage {
  opened: boolean;
  problem: string | null;
  tables: PerRowidTable<TableSql>;
  records: RecordsSql;
  meta: Map<string, string>;
  queries: number;
}

const CHUNK = 2048;

function emptyTable(problem: string | null): TableSql {
  return {
    usable: false,
    problem,
    rows: new Map(),
    covered: new RowidRanges(),
    failed: [],
    indexRowids: new Set(),
    indexComplete: false,
    bounded: false,
  };
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

function toNumber(value: unknown): number | null {
  const n = typeof value === "bigint" ? narrowInt(value) : value;
  return typeof n === "number" && Number.isSafeInteger(n) ? n : null;
}

/**
 * Read what SQL can from the working copy at `path`. `pageMax` bounds tables SQL cannot bound;
 * `recordKeys` (records seen on the pages) are where reading `records` resumes past damage.
 */
export function salvageSql(
  path: string,
  pageMax: PerRowidTable<number>,
  recordKeys: readonly RecordKey[],
): SqlSalvage {
  const result: SqlSalvage = {
    opened: false,
    problem: null,
    tables: perRowidTable(() => emptyTable("the database could not be opened")),
    records: emptyRecordsSql("the database could not be opened"),
    meta: new Map(),
    queries: 0,
  };
  let db: Database.Database;
  try {
    db = new Database(path, { fileMustExist: true, timeout: 1000 });
  } catch (error) {
    result.problem = (error as Error).message;
    return result;
  }
  try {
    db.pragma("cell_size_check = ON");
    db.pragma("query_only = ON");
    db.prepare("SELECT count(*) FROM sqlite_schema").get();
    result.opened = true;
  } catch (error) {
    result.problem = `the schema is unreadable: ${(error as Error).message}`;
    db.close();
    return result;
  }
  try {
    for (const table of ROWID_TABLES) result.tables[table] = salvageTable(db, table, pageMax[table], result);
    result.records = salvageRecordsSql(db, recordKeys, result);
    readMeta(db, result);
  } finally {
    db.close();
  }
  return result;
}

function readMeta(db: Database.Database, result: SqlSalvage): void {
  try {
    for (const row of db.prepare("SELECT key, value FROM meta").raw(true).iterate()) {
      const [key, value] = row as unknown[];
      if (typeof key === "string" && typeof value === "string") result.meta.set(key, value);
    }
  } catch {
    // What was read before the failure is kept; the page-level pass may find the rest.
  }
}

function salvageTable(db: Database.Database, table: RowidTable, pageMax: number, run: SqlSalvage): TableSql {
  let rowStmt: Database.Statement;
  let oneStmt: Database.Statement;
  let indexes: { name: string; columns: string[] }[];
  try {
    const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(table);
    if (exists === undefined) return emptyTable(`the table ${table} is missing from the schema`);
    // A store from before a column was added (conversation_hash, schema 5) reads it as null.
    const present = new Set(
      (db.prepare(`PRAGMA table_info(${quote(table)})`).all() as { name: string }[]).map((c) => c.name),
    );
    const cols = TABLE_COLUMNS[table]
      .map((c) => (present.has(c) ? quote(c) : `${String(missingValue(c) ?? "NULL")} AS ${quote(c)}`))
      .join(", ");
    const select = `SELECT rowid, ${cols} FROM ${quote(table)}`;
    rowStmt = db.prepare(`${select} WHERE rowid BETWEEN ? AND ? ORDER BY rowid`).raw(true).safeIntegers(true);
    oneStmt = db.prepare(`${select} WHERE rowid = ?`).raw(true).safeIntegers(true);
    indexes = (
      db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?")
        .pluck()
        .all(table) as string[]
    ).map((name) => ({
      name,
      columns: (db.pragma(`index_info(${quote(name)})`) as { name: string | null }[]).map(
        (c) => c.name ?? "",
      ),
    }));
  } catch (error) {
    return emptyTable(`the table ${table} cannot be queried: ${(error as Error).message}`);
  }
  const t = emptyTable(null);
  t.usable = true;

  for (const index of indexes) {
    if (index.columns.some((c) => c === "")) continue;
    for (const desc of [false, true]) {
      const order = index.columns.map((c) => `${quote(c)}${desc ? " DESC" : ""}`).join(", ");
      const sql = `SELECT rowid FROM ${quote(table)} INDEXED BY ${quote(index.name)} ORDER BY ${order}`;
      run.queries++;
      try {
        for (const raw of db.prepare(sql).pluck().safeIntegers(true).iterate()) {
          const rowid = toNumber(raw);
          if (rowid !== null) t.indexRowids.add(rowid);
        }
        if (!desc) t.indexComplete = true;
        if (!desc) break; // a complete forward scan leaves nothing for the backward one to add
      } catch {
        // Keep what the scan produced before the damage; the other direction reads from the far end.
      }
    }
  }
  const known = new SortedRowids(t.indexRowids);
  const guide = t.indexComplete ? known : null;

  const scalar = (sql: string): { ok: boolean; value: number | null } => {
    run.queries++;
    try {
      return { ok: true, value: toNumber(db.prepare(sql).pluck().safeIntegers(true).get()) };
    } catch {
      return { ok: false, value: null };
    }
  };
  const min = scalar(`SELECT min(rowid) FROM ${quote(table)}`);
  const max = scalar(`SELECT max(rowid) FROM ${quote(table)}`);
  if (min.ok && max.ok && min.value === null && max.value === null) {
    t.covered.add(Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY);
    t.bounded = true;
    return t;
  }
  const lo = min.ok && min.value !== null ? min.value : Math.min(1, known.min ?? 1);
  if (min.ok && min.value !== null) t.covered.add(Number.NEGATIVE_INFINITY, min.value - 1);
  const hi = max.ok && max.value !== null ? max.value : Math.max(lo, known.max ?? lo, pageMax);
  if (max.ok && max.value !== null) {
    t.covered.add(max.value + 1, Number.POSITIVE_INFINITY);
    t.bounded = true;
  }

  const take = (raw: unknown[]): number | null => {
    const rowid = toNumber(raw[0]);
    if (rowid === null) return null;
    const values = raw.slice(1).map((v) => (typeof v === "bigint" ? narrowInt(v) : v) as SqlValue);
    t.rows.set(rowid, { rowid, values });
    return rowid;
  };
  const readRange = (a: number, b: number): void => {
    if (a > b || (guide !== null && !guide.anyIn(a, b))) return;
    let last = a - 1;
    run.queries++;
    try {
      const rows = a === b ? oneStmt.iterate(a) : rowStmt.iterate(a, b);
      for (const raw of rows) last = take(raw as unknown[]) ?? last;
      t.covered.add(a, b);
      return;
    } catch {
      if (last >= a) t.covered.add(a, last);
    }
    const from = last + 1;
    if (from > b) return; // the scan failed past the end of the range
    if (a === b) {
      t.failed.push(a);
      return;
    }
    if (from === b) {
      readRange(b, b);
      return;
    }
    const mid = Math.floor((from + b) / 2);
    readRange(from, mid);
    readRange(mid + 1, b);
  };
  for (let a = lo; a <= hi; a += CHUNK) readRange(a, Math.min(a + CHUNK - 1, hi));

  if (!t.bounded) {
    // Probe upwards: a seek past the last row that comes back empty bounds the table.
    const probe = db.prepare(`SELECT rowid FROM ${quote(table)} WHERE rowid > ? ORDER BY rowid LIMIT 1`);
    probe.pluck().safeIntegers(true);
    let x = hi;
    for (const rowid of t.rows.keys()) if (rowid > x) x = rowid;
    let step = 1;
    let unexplored: number | null = null; // start of a span jumped over by failing probes
    for (let i = 0; i < 128 && x < Number.MAX_SAFE_INTEGER; i++) {
      run.queries++;
      try {
        const next = toNumber(probe.get(x));
        if (next === null) {
          t.covered.add(x + 1, Number.POSITIVE_INFINITY);
          t.bounded = true;
          break;
        }
        if (unexplored !== null) readRange(unexplored, x);
        unexplored = null;
        readRange(x + 1, next);
        x = next;
        step = 1;
      } catch {
        unexplored ??= x + 1;
        x += step;
        step *= 2;
      }
    }
    // A span the probes jumped over is read now that it is bounded (or left out, and the count of
    // lost rows stays a lower bound).
    if (t.bounded && unexplored !== null) {
      if (x - unexplored < 1_000_000) readRange(unexplored, x);
      else t.bounded = false;
    }
  }
  return t;
}
