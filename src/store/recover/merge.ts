// Putting the two salvage passes together, table by table. SQL wins: a page row is taken only for a
// rowid SQL could not read, and only if what is known about the table does not say that row was
// gone (an index read end to end, or an unreliable freelist with index evidence against it).
// Then the honest counts: found (known to have existed), salvaged, lost, and whether lost is only
// a lower bound.
import type { PageSalvage } from "./page-salvage.js";
import { type RowidTable, rowKey, type SalvagedRow } from "./row-shapes.js";
import type { TableSql } from "./sql-salvage.js";

/** The honest counts of one table's salvage (rows with rowids, or records by key). */
export interface SalvageCounts {
  found: number;
  salvaged: number;
  lost: number;
  /** True when rows may have been lost without a trace (lost counts only those known). */
  lostIsLowerBound: boolean;
  fromSql: number;
  fromPages: number;
  /** Rows seen on pages but not taken: SQL or an index said they were no longer there. */
  pageRowsRejected: number;
  /** Rows SQL returned whose overflow pages are damaged: their content is not trustworthy. */
  overflowDamaged: number;
}

export interface TableOutcome extends SalvageCounts {
  /** Salvaged rows, by rowid. */
  rows: SalvagedRow[];
  lostRowids: number[];
}

export interface MergeContext {
  /** The freelist was read from an intact chain, so non-free leaves hold only live rows. */
  freelistReliable: boolean;
  /** The WAL broke before committed frames: rows there are lost and cannot all be counted. */
  walBroken: boolean;
}

export function mergeTable(
  table: RowidTable,
  sql: TableSql,
  pages: PageSalvage,
  ctx: MergeContext,
): TableOutcome {
  // A row whose overflow chain is damaged reads through SQL without an error, with the damaged
  // bytes as its text: that is not a salvaged row.
  const rows = new Map<number, SalvagedRow>(sql.rows);
  let damagedBySql = 0;
  for (const rowid of pages.broken[table]) if (rows.delete(rowid)) damagedBySql++;
  const keys = new Set<string>();
  for (const row of rows.values()) {
    const key = rowKey(table, row.values);
    if (key !== null) keys.add(key);
  }
  const unread = (rowid: number) => !sql.covered.has(rowid);
  const evidence = sql.indexRowids;
  let fromPages = 0;
  let rejected = 0;
  for (const [rowid, row] of pages.rows[table]) {
    if (rows.has(rowid) || pages.conflicts[table].has(rowid)) continue;
    const indexSaysGone =
      (sql.indexComplete || !ctx.freelistReliable) && evidence.size > 0 && !evidence.has(rowid);
    const key = rowKey(table, row.values);
    if (!unread(rowid) || indexSaysGone || key === null || keys.has(key)) {
      rejected++;
      continue;
    }
    rows.set(rowid, row);
    keys.add(key);
    fromPages++;
  }

  const found = new Set<number>(rows.keys());
  for (const rowid of evidence) found.add(rowid);
  if (!sql.indexComplete) for (const rowid of sql.failed) found.add(rowid);
  for (const rowid of pages.broken[table]) if (unread(rowid) || sql.rows.has(rowid)) found.add(rowid);
  for (const rowid of pages.conflicts[table]) if (unread(rowid)) found.add(rowid);
  for (const rowid of pages.stranded[table]) found.add(rowid);

  const lostRowids = [...found].filter((r) => !rows.has(r)).sort((a, b) => a - b);
  const sorted = [...rows.values()].sort((a, b) => a.rowid - b.rowid);
  const unknowable = !sql.usable || !(sql.indexComplete || sql.bounded);
  return {
    rows: sorted,
    found: found.size,
    salvaged: sorted.length,
    lost: lostRowids.length,
    lostIsLowerBound: unknowable || ctx.walBroken || (!sql.indexComplete && pages.damagedCells > 0),
    fromSql: sql.rows.size - damagedBySql,
    fromPages,
    pageRowsRejected: rejected,
    overflowDamaged: damagedBySql,
    lostRowids,
  };
}
