// How the salvaged copies of records are put together: the newest version of a key wins (updated_at,
// then the copy written last), SQL's word that a key was gone stands, a record on a damaged overflow
// chain is lost rather than replaced by an older copy, and what cannot be bounded says so. Key order
// is SQLite's own, checked against SQLite.
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { compareKeys, KeyRanges } from "./key-ranges.js";
import type { MergeContext } from "./merge.js";
import { mergeRecords } from "./records-merge.js";
import { emptyRecordsPages, type RecordsPages } from "./records-pages.js";
import { emptyRecordsSql, type RecordsSql } from "./records-sql.js";
import { type RecordKey, recordId, type SalvagedRecord, toRecord } from "./row-shapes.js";

const OK: MergeContext = { freelistReliable: true, walBroken: false };

function record(
  kind: string,
  key: string,
  updatedAt: number,
  value: string | null,
  sessionId: string | null = null,
) {
  const r = toRecord([kind, key, sessionId, value, updatedAt]);
  if (r === null) throw new Error("not a record");
  return r;
}

/** SQL that read the whole table and found these. */
function sqlWith(...rows: SalvagedRecord[]): RecordsSql {
  const sql = emptyRecordsSql(null);
  sql.usable = true;
  sql.complete = true;
  sql.covered.add(null, null);
  for (const r of rows) sql.rows.set(r.id, r);
  return sql;
}

/** SQL that could not read the table at all. */
function blindSql(): RecordsSql {
  const sql = emptyRecordsSql(null);
  sql.usable = true;
  return sql;
}

function pagesWith(...copies: { record: SalvagedRecord; order: number }[]): RecordsPages {
  const pages = emptyRecordsPages();
  copies.forEach(({ record, order }, pgno) => {
    const list = pages.copies.get(record.id) ?? [];
    list.push({ record, order, pgno: pgno + 2 });
    pages.copies.set(record.id, list);
  });
  return pages;
}

const values = (rows: SalvagedRecord[]) => rows.map((r) => r.values[3]);

describe("merging records", () => {
  it("keeps the newest version by updated_at, wherever it was found", () => {
    const sqlCopy = record("todo", "s1", 100, "[1]", "s1");
    const newer = record("todo", "s1", 200, "[1,2]", "s1");
    const older = record("memory", "n1", 50, "old");
    const newest = record("memory", "n1", 60, "new");
    const out = mergeRecords(
      blindSqlWith(sqlCopy),
      pagesWith({ record: newer, order: -1 }, { record: older, order: 4096 }, { record: newest, order: -1 }),
      OK,
    );
    expect(values(out.rows)).toEqual(["new", "[1,2]"]);
    expect(out).toMatchObject({ salvaged: 2, found: 2, lost: 0, fromSql: 0, fromPages: 2, conflicts: 0 });
  });

  it("on equal times, the copy written last: SQL, then the later WAL frame, then the main file", () => {
    const a = record("usage", "s1", 100, "main");
    const b = record("usage", "s1", 100, "wal early");
    const c = record("usage", "s1", 100, "wal late");
    const pages = pagesWith({ record: a, order: -1 }, { record: c, order: 9000 }, { record: b, order: 32 });
    expect(values(mergeRecords(blindSql(), pages, OK).rows)).toEqual(["wal late"]);
    const own = record("usage", "s1", 100, "sql");
    const out = mergeRecords(sqlWith(own), pages, OK);
    expect(values(out.rows)).toEqual(["sql"]);
    expect(out.fromSql).toBe(1);
  });

  it("two different copies equally new from the same file: neither is taken, and it is counted lost", () => {
    const pages = pagesWith(
      { record: record("memory", "n1", 100, "one"), order: -1 },
      { record: record("memory", "n1", 100, "two"), order: -1 },
      { record: record("memory", "n2", 100, "same"), order: -1 },
      { record: record("memory", "n2", 100, "same"), order: -1 },
    );
    const out = mergeRecords(blindSql(), pages, OK);
    expect(values(out.rows)).toEqual(["same"]);
    expect(out).toMatchObject({ conflicts: 1, found: 2, lost: 1, lostKeys: [{ kind: "memory", key: "n1" }] });
  });

  it("never takes a page copy SQL read past, or one the complete index does not list", () => {
    const live = record("memory", "a", 10, "live");
    const deletedNote = record("memory", "b", 10, "deleted");
    const sql = sqlWith(live);
    const pages = pagesWith({ record: live, order: -1 }, { record: deletedNote, order: -1 });
    const out = mergeRecords(sql, pages, OK);
    expect(values(out.rows)).toEqual(["live"]);
    expect(out).toMatchObject({ found: 1, lost: 0, pageRowsRejected: 1, lostIsLowerBound: false });

    const blind = blindSql();
    blind.indexComplete = true;
    blind.indexKeys.set(recordId("todo", "s1"), { kind: "todo", key: "s1" });
    const listed = record("todo", "s1", 10, "[]", "s1");
    const unlisted = record("todo", "s2", 10, "[]", "s2");
    const global = record("memory", "n", 10, "kept");
    const byIndex = mergeRecords(
      blind,
      pagesWith(
        { record: listed, order: -1 },
        { record: unlisted, order: -1 },
        { record: global, order: -1 },
      ),
      OK,
    );
    // A global record is not in the index on session_id, so the index says nothing about it.
    expect(byIndex.rows.map((r) => r.key)).toEqual(["n", "s1"]);
    expect(byIndex).toMatchObject({ pageRowsRejected: 1, lostIsLowerBound: true });
  });

  it("a record on a broken overflow chain is lost, not replaced by an older copy", () => {
    const damaged = record("compaction", "s1", 300, "garbled");
    const stale = record("compaction", "s1", 100, "old summary");
    const pages = pagesWith({ record: stale, order: -1 });
    pages.broken.set(damaged.id, { kind: "compaction", key: "s1" });
    const out = mergeRecords(sqlWith(damaged), pages, OK);
    expect(out).toMatchObject({ salvaged: 0, found: 1, lost: 1, overflowDamaged: 1 });
  });

  it("counts records listed by the index or seen in stranded WAL frames as lost when not salvaged", () => {
    const sql = blindSql();
    sql.indexKeys.set(recordId("run", "r1"), { kind: "run", key: "r1" });
    const pages = pagesWith({ record: record("run", "r2", 1, "{}", "s"), order: -1 });
    pages.stranded.set(recordId("run", "r3"), { kind: "run", key: "r3" });
    pages.stranded.set(recordId("run", "r2"), { kind: "run", key: "r2" });
    const out = mergeRecords(sql, pages, { freelistReliable: true, walBroken: true });
    expect(out).toMatchObject({ found: 3, salvaged: 1, lost: 2, lostIsLowerBound: true });
    expect(out.lostKeys).toEqual([
      { kind: "run", key: "r1" },
      { kind: "run", key: "r3" },
    ]);
  });
});

/** SQL that could not read the table end to end, but did return this one row. */
function blindSqlWith(row: SalvagedRecord): RecordsSql {
  const sql = blindSql();
  sql.rows.set(row.id, row);
  sql.covered.add(row, row);
  return sql;
}

describe("key order", () => {
  it("is SQLite's: UTF-8 bytes, kind before key, a prefix first", () => {
    const keys: RecordKey[] = [
      { kind: "run", key: "b" },
      { kind: "run_event", key: "a" },
      { kind: "run", key: "😀" },
      { kind: "run", key: "！" },
      { kind: "run", key: "ab" },
      { kind: "memory", key: "z" },
      { kind: "run", key: "a" },
    ];
    const db = new Database(":memory:");
    db.exec("CREATE TABLE r (kind TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (kind, key)) WITHOUT ROWID");
    const insert = db.prepare("INSERT INTO r VALUES (?, ?)");
    for (const k of keys) insert.run(k.kind, k.key);
    const sqlite = db.prepare("SELECT kind, key FROM r ORDER BY kind, key").all();
    db.close();
    expect([...keys].sort(compareKeys)).toEqual(sqlite);
    // JavaScript's own order (UTF-16 code units) puts the emoji first; SQLite does not.
    expect("😀" < "！").toBe(true);
  });

  it("spans cover a key inclusively, and are complete only when they leave no gap", () => {
    const k = (key: string) => ({ kind: "m", key });
    const ranges = new KeyRanges();
    ranges.add(null, k("c"));
    ranges.add(k("e"), null);
    expect([ranges.has(k("c")), ranges.has(k("d")), ranges.has(k("e"))]).toEqual([true, false, true]);
    expect(ranges.complete).toBe(false);
    ranges.add(k("c"), k("e"));
    expect(ranges.complete).toBe(true);
  });
});
