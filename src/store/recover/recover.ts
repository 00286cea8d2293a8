// `tenax sessions recover`: salvage a damaged store without ever writing to it. Forensic copy
// first; then SQL-level salvage on a working copy and page-level salvage on the copied bytes; both
// merged (SQL wins; for `records`, the newest version of a key), the spool folded in, and with an
// output path, a new store written from it all.
import { existsSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "../../core/errors.js";
import { type ForensicCopy, takeForensicCopy, utcStamp } from "./forensic-copy.js";
import { mergeTable, type SalvageCounts, type TableOutcome } from "./merge.js";
import { PageImage } from "./page-image.js";
import { type PageSalvage, salvagePages } from "./page-salvage.js";
import { mergeRecords, type RecordsOutcome } from "./records-merge.js";
import type { RecoveryReport, TableReport } from "./report.js";
import { type PerRowidTable, perRowidTable, type RecordKey, rowKey, TABLES } from "./row-shapes.js";
import { foldSpool } from "./spool-fold.js";
import { type SqlSalvage, salvageSql } from "./sql-salvage.js";
import { writeRecoveredStore } from "./write-output.js";

export interface RecoverOptions {
  /** The damaged state.db. */
  source: string;
  /** Write the salvage into a new store here; absent: inspect only. */
  output?: string;
  /** Spool folder to fold in (default: `spool` beside the source). */
  spoolDir?: string;
  /** Root of the forensic folders (default: `forensics` beside the source). */
  forensicsDir?: string;
  /** The profile to use when the source's own meta table is unreadable. */
  profile?: string;
  now?: () => number;
}

/** Where --output writes when the user takes the suggestion: beside the source, stamped. */
export function defaultOutputPath(source: string, now: number): string {
  const name = basename(source).replace(/\.db$/, "");
  return join(dirname(source), `${name}.recovered-${utcStamp(now)}.db`);
}

function checkPaths(source: string, output: string | undefined): void {
  if (!existsSync(source) || !statSync(source).isFile()) {
    throw new UsageError(`no database file at ${source}`, {
      hint: "give the path of the damaged state.db with --source",
    });
  }
  if (output === undefined) return;
  if (resolve(output) === source) throw new UsageError("--output must be a new file, not the source");
  for (const path of [output, `${output}-wal`, `${output}-shm`]) {
    if (existsSync(path)) {
      throw new UsageError(`${path} already exists; recovery writes only into a new file`, {
        hint: "choose another --output path, or move that file away first",
      });
    }
  }
  if (!existsSync(dirname(output)))
    throw new UsageError(`the folder of --output, ${dirname(output)}, does not exist`);
}

export async function recoverStore(options: RecoverOptions): Promise<RecoveryReport> {
  const now = options.now ?? Date.now;
  const started = now();
  const source = resolve(options.source);
  const output = options.output === undefined ? undefined : resolve(options.output);
  checkPaths(source, output);

  const copy = takeForensicCopy(source, { root: options.forensicsDir, now: started });
  let pages: PageSalvage;
  let sql: SqlSalvage;
  try {
    const image = PageImage.open(
      copy.files.find((f) => f.role === "db")?.copy ?? copy.work.db,
      walCopy(copy),
    );
    try {
      pages = salvagePages(image);
    } finally {
      image.close();
    }
    const salvaged = pages;
    const pageMax = perRowidTable((t) => {
      let max = 0;
      for (const rowid of salvaged.rows[t].keys()) if (rowid > max) max = rowid;
      return max;
    });
    const recordKeys: RecordKey[] = [...salvaged.records.broken.values()];
    for (const [first] of salvaged.records.copies.values()) if (first) recordKeys.push(first.record);
    sql = salvageSql(copy.work.db, pageMax, recordKeys);
  } finally {
    rmSync(copy.work.dir, { recursive: true, force: true });
  }

  // Committed frames that cannot be applied (past a damaged frame, or behind a damaged WAL header)
  // may hold rows nothing else knows of.
  const walBroken = pages.wal.stranded > 0 || (pages.wal.present && pages.wal.problem !== null);
  const ctx = { freelistReliable: pages.freelist.status === "ok", walBroken };
  const outcomes = perRowidTable((t) => mergeTable(t, sql.tables[t], pages, ctx));
  const records = mergeRecords(sql.records, pages.records, ctx);
  const meta = (key: string) => sql.meta.get(key) ?? pages.meta.get(key) ?? null;
  const profileFromMeta = sql.meta.get("profile") ?? null;
  const profileFromPages = pages.meta.get("profile") ?? null;
  const profile = profileFromMeta
    ? { name: profileFromMeta, from: "meta" as const }
    : profileFromPages
      ? { name: profileFromPages, from: "pages" as const }
      : { name: options.profile ?? "default", from: "option" as const };

  const knownUids = new Set<string>();
  for (const row of outcomes.messages.rows) {
    const uid = rowKey("messages", row.values);
    if (uid !== null) knownUids.add(uid);
  }
  const spoolDir = resolve(options.spoolDir ?? join(dirname(source), "spool"));
  const spool = foldSpool(spoolDir, profile.name, knownUids);

  const report: RecoveryReport = {
    mode: output === undefined ? "inspect" : "output",
    source,
    started_at: new Date(started).toISOString(),
    duration_ms: 0,
    profile,
    store_id: meta("store_id"),
    forensics: {
      dir: copy.dir,
      manifest: copy.manifest,
      fallback: copy.fallback,
      files: copy.files.map((f) => ({ role: f.role, original: f.original, size: f.size, sha256: f.sha256 })),
      changed_while_copied: copy.unstable,
    },
    tables: {
      ...perRowidTable((t) => tableReport(outcomes[t], { rowids: outcomes[t].lostRowids })),
      records: tableReport(records, { keys: records.lostKeys }),
    },
    pages: {
      page_size: pages.pageSize,
      page_size_from: pages.pageSizeFrom,
      total: pages.pageCount,
      unreadable: pages.unreadable.length,
      missing: pages.missing,
      free: pages.freelist.pages.size,
      freelist: pages.freelist.status,
      header_problem: pages.headerProblem,
    },
    wal: pages.wal,
    sql: { opened: sql.opened, problem: sql.problem, queries: sql.queries },
    spool: {
      dir: spoolDir,
      files: spool.files,
      records: spool.records.length,
      foreign_records: spool.foreign,
      skipped_lines: spool.skippedLines,
      ops: spool.ops,
      messages_new: spool.messagesNew,
      duplicates: spool.duplicates,
    },
    notes: [],
    suggested_output: output === undefined ? defaultOutputPath(source, started) : null,
    output: null,
    complete: false,
  };

  if (output !== undefined) {
    const digest = (role: string) => copy.files.find((f) => f.role === role)?.sha256 ?? null;
    report.output = await writeRecoveredStore({
      path: output,
      scratchDir: copy.dir,
      profile: profile.name,
      source,
      now: started,
      rows: perRowidTable((t) => outcomes[t].rows),
      records: records.rows,
      spool,
      sourceStoreId: meta("store_id"),
      sourceDigest: { db: digest("db"), wal: digest("wal") },
    });
  }
  report.notes = notes(report, pages, sql, { ...outcomes, records }, copy);
  report.complete = isComplete(report);
  report.duration_ms = now() - started;
  return report;
}

function walCopy(copy: ForensicCopy): string | null {
  return copy.files.find((f) => f.role === "wal")?.copy ?? null;
}

/** A table's report; `records` has no rowids, so what it lost is named by (kind, key) instead. */
function tableReport(
  outcome: SalvageCounts,
  lost: { rowids: number[] } | { keys: RecordKey[] },
): TableReport {
  return {
    found: outcome.found,
    salvaged: outcome.salvaged,
    lost: outcome.lost,
    lost_is_lower_bound: outcome.lostIsLowerBound,
    from_sql: outcome.fromSql,
    from_pages: outcome.fromPages,
    lost_rowids: "rowids" in lost ? lost.rowids.slice(0, 100) : [],
    ...("keys" in lost ? { lost_keys: lost.keys.slice(0, 100).map(({ kind, key }) => ({ kind, key })) } : {}),
  };
}

function isComplete(report: RecoveryReport): boolean {
  const tablesOk = TABLES.every((t) => report.tables[t].lost === 0 && !report.tables[t].lost_is_lower_bound);
  if (!tablesOk) return false;
  const out = report.output;
  if (out === null) return true;
  return out.rejected.length === 0 && out.spool.failed.length === 0 && out.integrity.status === "ok";
}

function notes(
  report: RecoveryReport,
  pages: PageSalvage,
  sql: SqlSalvage,
  outcomes: PerRowidTable<TableOutcome> & { records: RecordsOutcome },
  copy: ForensicCopy,
): string[] {
  const out: string[] = [];
  if (copy.fallback) out.push(copy.fallback);
  for (const file of copy.unstable) {
    out.push(
      `${file} kept changing while it was copied: is a Tenax process still writing to it? Stop it and recover again`,
    );
  }
  if (report.pages.header_problem) out.push(`page 1: ${report.pages.header_problem}`);
  if (report.pages.page_size_from !== "header") {
    out.push(
      `the page size (${report.pages.page_size}) was taken from the ${report.pages.page_size_from === "wal" ? "WAL header" : "layout of the pages"}`,
    );
  }
  if (pages.freelist.detail) {
    out.push(
      `${pages.freelist.detail}; rows from pages are taken only where SQL and the indexes agree they existed, where those could be read`,
    );
  }
  if (report.wal.problem) out.push(report.wal.problem);
  if (report.wal.stranded > 0) {
    out.push(
      `${report.wal.stranded} committed WAL frames lie past the damage and cannot be applied; the rows seen there are counted as lost`,
    );
  }
  if (!sql.opened)
    out.push(`SQLite could not read the store (${sql.problem}); everything came from the pages`);
  for (const t of TABLES) {
    const problem = t === "records" ? sql.records.problem : sql.tables[t].problem;
    if (sql.opened && problem) out.push(problem);
    if (report.tables[t].lost_is_lower_bound) {
      out.push(
        `${t}: the damaged part could not be bounded, so more rows than the ${report.tables[t].lost} counted may be lost`,
      );
    }
    const overflow = outcomes[t].overflowDamaged;
    if (overflow > 0) {
      out.push(
        `${t}: ${overflow} rows have damaged overflow pages; SQLite reads them without an error but their text is not what was written, so they count as lost`,
      );
    }
    const rejected = outcomes[t].pageRowsRejected;
    if (rejected > 0)
      out.push(
        `${t}: ${rejected} rows seen on pages were not taken because SQL or an index showed they were gone`,
      );
  }
  if (outcomes.records.conflicts > 0) {
    out.push(
      `records: ${outcomes.records.conflicts} were found in two copies as new as each other but different, so neither was taken and they count as lost`,
    );
  }
  if (sql.records.unrecognised > 0) {
    out.push(
      `records: ${sql.records.unrecognised} rows SQL returned are not shaped as Tenax writes them and were left out`,
    );
  }
  const sessions = new Set(outcomes.sessions.rows.map((r) => rowKey("sessions", r.values)));
  const orphans = outcomes.records.rows.filter((r) => r.sessionId !== null && !sessions.has(r.sessionId));
  if (orphans.length > 0) {
    out.push(
      `records: ${orphans.length} belong to sessions whose own row was lost; like messages of a lost session, they are kept under a placeholder session`,
    );
  }
  if (report.spool.foreign_records > 0) {
    out.push(
      `${report.spool.foreign_records} spool records belong to another profile than ${report.profile.name} and were left out (if the store's own record of its profile was lost, pass --profile NAME)`,
    );
  }
  if (report.spool.skipped_lines > 0)
    out.push(`${report.spool.skipped_lines} spool lines were not readable records`);
  if (report.output) {
    for (const r of report.output.rejected.slice(0, 5)) {
      const which = r.key === undefined ? `rowid ${r.rowid}` : `${r.key.kind} ${r.key.key}`;
      out.push(`${r.table} ${which} was not written: ${r.reason}`);
    }
    for (const f of report.output.spool.failed.slice(0, 5))
      out.push(`a spool record could not be replayed: ${f.reason}`);
    if (report.output.integrity.status !== "ok") {
      out.push(
        `the new store's integrity check says ${report.output.integrity.status}: ${report.output.integrity.detail.join("; ")}`,
      );
    }
  }
  return out;
}
