// Putting the two salvage passes together for `records`. As in the table itself, the newest version
// of a key wins: the greatest updated_at, then the copy written last (SQL's reading of the live
// b-tree, then WAL frames in their order, then the main file). A page copy is not taken where SQL
// read over the key's place without finding it, or where the index on session_id says it was gone;
// nor, when SQL's own copy lies on a damaged overflow chain, is an older copy taken in its place.
import { compareKeys } from "./key-ranges.js";
import type { MergeContext, SalvageCounts } from "./merge.js";
import type { RecordsPages } from "./records-pages.js";
import type { RecordsSql } from "./records-sql.js";
import type { RecordKey, SalvagedRecord } from "./row-shapes.js";

/** Records may be lost without a trace (only session-bound ones are listed by an index). */
export interface RecordsOutcome extends SalvageCounts {
  /** Salvaged records, in key order. */
  rows: SalvagedRecord[];
  /** Records seen in two copies equally new with different values: neither is trusted. */
  conflicts: number;
  lostKeys: RecordKey[];
}

/** SQL reads the live b-tree as SQLite resolves it: newer than any single page's copy. */
const SQL_ORDER = Number.POSITIVE_INFINITY;

interface Candidate {
  record: SalvagedRecord;
  order: number;
}

const sameValues = (a: SalvagedRecord, b: SalvagedRecord) => a.values.every((v, i) => v === b.values[i]);

export function mergeRecords(sql: RecordsSql, pages: RecordsPages, ctx: MergeContext): RecordsOutcome {
  const taken: SalvagedRecord[] = [];
  const found = new Map<string, RecordKey>();
  let fromSql = 0;
  let rejected = 0;
  let damagedBySql = 0;
  let conflicts = 0;
  const evidence = sql.indexKeys;
  const gone = (record: SalvagedRecord): boolean => {
    if (sql.covered.has(record)) return true;
    const indexSaysGone =
      record.sessionId !== null &&
      (sql.indexComplete || !ctx.freelistReliable) &&
      evidence.size > 0 &&
      !evidence.has(record.id);
    return indexSaysGone;
  };

  for (const id of new Set([...sql.rows.keys(), ...pages.copies.keys()])) {
    const own = sql.rows.get(id);
    const broken = pages.broken.has(id);
    const candidates: Candidate[] = [];
    let turnedAway = 0;
    if (own !== undefined && broken) damagedBySql++;
    else if (own !== undefined) candidates.push({ record: own, order: SQL_ORDER });
    for (const copy of pages.copies.get(id) ?? []) {
      if (own === undefined ? gone(copy.record) : broken) turnedAway++;
      else candidates.push(copy);
    }
    candidates.sort((a, b) => b.record.updatedAt - a.record.updatedAt || b.order - a.order);
    const [best, next] = candidates;
    if (best === undefined) {
      // A broken copy is counted below, with the other broken records.
      if (turnedAway > 0 && !broken) rejected++;
      continue;
    }
    found.set(id, { kind: best.record.kind, key: best.record.key });
    const tie =
      next !== undefined &&
      next.record.updatedAt === best.record.updatedAt &&
      next.order === best.order &&
      !sameValues(next.record, best.record);
    if (tie) {
      conflicts++;
      continue;
    }
    taken.push(best.record);
    if (best.order === SQL_ORDER) fromSql++;
  }

  const salvagedIds = new Set(taken.map((r) => r.id));
  for (const [id, key] of evidence) found.set(id, key);
  for (const [id, key] of pages.broken) if (sql.rows.has(id) || !sql.covered.has(key)) found.set(id, key);
  for (const [id, key] of pages.stranded) found.set(id, key);
  const lostKeys = [...found].filter(([id]) => !salvagedIds.has(id)).map(([, key]) => key);
  lostKeys.sort(compareKeys);
  taken.sort(compareKeys);
  return {
    rows: taken,
    found: found.size,
    salvaged: taken.length,
    lost: lostKeys.length,
    lostIsLowerBound: !sql.usable || !sql.complete || ctx.walBroken,
    fromSql,
    fromPages: taken.length - fromSql,
    pageRowsRejected: rejected,
    overflowDamaged: damagedBySql,
    conflicts,
    lostKeys,
  };
}
