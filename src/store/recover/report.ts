// What `tenax sessions recover` found, as one typed value: printed for people by the CLI and
// emitted as is with --json. Counts are per table; notes say in words what the numbers cannot.

import type { IntegrityResult } from "../integrity.js";
import type { ForensicRole } from "./forensic-copy.js";
import type { FreelistStatus } from "./freelist.js";
import type { WalSummary } from "./page-salvage.js";
import type { RecordKey, TableName } from "./row-shapes.js";

export interface TableReport {
  /** Rows known to have existed: salvaged, plus rowids seen in indexes or damaged ranges. */
  found: number;
  salvaged: number;
  /** found - salvaged. */
  lost: number;
  /** Rows may have been lost without leaving a trace, so `lost` counts only those known. */
  lost_is_lower_bound: boolean;
  from_sql: number;
  from_pages: number;
  /** The first lost rowids (at most 100); none for `records`, which has no rowids. */
  lost_rowids: number[];
  /** `records` only: the first lost records (at most 100), by their key. */
  lost_keys?: RecordKey[];
}

export interface RejectedRow {
  table: TableName;
  /** Null for a record, which is named by `key`. */
  rowid: number | null;
  key?: RecordKey;
  reason: string;
}

export interface OutputReport {
  path: string;
  store_id: string;
  written: {
    sessions: number;
    /** Sessions whose row was lost, made again for their messages or records. */
    placeholder_sessions: number;
    messages: number;
    turns: number;
    records: number;
  };
  /** Salvaged rows the new store refused (a constraint they break); counted as lost. */
  rejected: RejectedRow[];
  spool: {
    records: number;
    ops: number;
    messages: number;
    duplicates: number;
    failed: { spooled_at: number; reason: string }[];
  };
  integrity: IntegrityResult;
}

export interface RecoveryReport {
  mode: "inspect" | "output";
  source: string;
  started_at: string;
  duration_ms: number;
  profile: { name: string; from: "meta" | "pages" | "option" };
  store_id: string | null;
  forensics: {
    dir: string;
    manifest: string;
    fallback: string | null;
    files: { role: ForensicRole; original: string; size: number; sha256: string }[];
    changed_while_copied: string[];
  };
  tables: Record<TableName, TableReport>;
  pages: {
    page_size: number;
    page_size_from: "header" | "wal" | "guess";
    total: number;
    unreadable: number;
    missing: number;
    free: number;
    freelist: FreelistStatus;
    header_problem: string | null;
  };
  wal: WalSummary;
  sql: { opened: boolean; problem: string | null; queries: number };
  spool: {
    dir: string;
    files: string[];
    records: number;
    foreign_records: number;
    skipped_lines: number;
    ops: number;
    messages_new: number;
    duplicates: number;
  };
  notes: string[];
  /** In --inspect-only mode: where --output would write by default. */
  suggested_output: string | null;
  output: OutputReport | null;
  /** Everything found was salvaged (and written, with --output), and nothing may be missing unseen. */
  complete: boolean;
}
