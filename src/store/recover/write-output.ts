// Writing the salvage into a new store. The store itself is made by the store code (schema,
// profile, a new store_id, so the profile's old search index is rebuilt once this file is put in
// place); the salvaged rows then go in by direct SQL, keeping their ids, uids, seq and timestamps
// (records their kind, key, session and time), and the spool is replayed through the store, where a
// spooled record write wins only if it is newer. Every message is left queued for the search index.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { checkIntegrity } from "../integrity.js";
import { Store } from "../store.js";
import type { OutputReport, RejectedRow } from "./report.js";
import {
  intValue,
  RECORD_COLUMNS,
  type RowidTable,
  type SalvagedRecord,
  type SalvagedRow,
  TABLE_COLUMNS,
} from "./row-shapes.js";
import type { SpoolFold } from "./spool-fold.js";

export interface OutputInput {
  path: string;
  /** Where the new store's throwaway search index and spool live while it is written. */
  scratchDir: string;
  profile: string;
  source: string;
  now: number;
  rows: Record<RowidTable, SalvagedRow[]>;
  records: readonly SalvagedRecord[];
  spool: SpoolFold;
  sourceStoreId: string | null;
  /** sha256 of the source's database and WAL as copied, for restore to see if they changed since. */
  sourceDigest: { db: string | null; wal: string | null };
}

const CHUNK = 1000;
const PLACEHOLDER_TITLE = "(recovered: session record lost)";

function insertSql(table: RowidTable): string {
  // Sessions and turns keep their rowid too, so listings that break ties by rowid stay the same.
  const cols = table === "messages" ? [...TABLE_COLUMNS[table]] : ["rowid", ...TABLE_COLUMNS[table]];
  return `INSERT INTO ${table} (${cols.join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`;
}

/** Insert rows in chunked transactions; a row the schema refuses is reported, never dropped silently. */
function insertRows(
  db: Database.Database,
  table: RowidTable,
  rows: readonly SalvagedRow[],
  rejected: RejectedRow[],
  after?: (row: SalvagedRow) => void,
): number {
  const insert = db.prepare(insertSql(table));
  let written = 0;
  for (let i = 0; i < rows.length; i += CHUNK) {
    db.transaction(() => {
      for (const row of rows.slice(i, i + CHUNK)) {
        try {
          insert.run(...(table === "messages" ? row.values : [row.rowid, ...row.values]));
          after?.(row);
          written++;
        } catch (error) {
          rejected.push({ table, rowid: row.rowid, reason: (error as Error).message });
        }
      }
    })();
  }
  return written;
}

/** Insert records in chunked transactions; like rows, one the schema refuses is reported. */
function insertRecords(db: Database.Database, records: readonly SalvagedRecord[], rejected: RejectedRow[]) {
  const insert = db.prepare(
    `INSERT INTO records (${RECORD_COLUMNS.join(", ")}) VALUES (${RECORD_COLUMNS.map(() => "?").join(", ")})`,
  );
  let written = 0;
  for (let i = 0; i < records.length; i += CHUNK) {
    db.transaction(() => {
      for (const record of records.slice(i, i + CHUNK)) {
        try {
          insert.run(...record.values);
          written++;
        } catch (error) {
          const key = { kind: record.kind, key: record.key };
          rejected.push({ table: "records", rowid: null, key, reason: (error as Error).message });
        }
      }
    })();
  }
  return written;
}

/**
 * Sessions for messages and records whose own session row was lost, spanning their times. (A
 * session's records go with it when it is deleted, so a record of a missing session means the
 * session's row was lost, not that it was deleted.)
 */
function placeholders(
  sessions: readonly SalvagedRow[],
  messages: readonly SalvagedRow[],
  records: readonly SalvagedRecord[],
  now: number,
) {
  const have = new Set(sessions.map((s) => s.values[0]));
  const spans = new Map<string, { first: number; last: number }>();
  const seen = (sessionId: unknown, at: number) => {
    if (typeof sessionId !== "string" || have.has(sessionId)) return;
    const span = spans.get(sessionId);
    if (span === undefined) spans.set(sessionId, { first: at, last: at });
    else spans.set(sessionId, { first: Math.min(span.first, at), last: Math.max(span.last, at) });
  };
  for (const m of messages) seen(m.values[2], intValue(m.values[11]) ?? now);
  for (const r of records) seen(r.sessionId, r.updatedAt);
  return [...spans].map(([id, span]) => [
    id,
    PLACEHOLDER_TITLE,
    "recovered",
    null,
    null,
    span.first,
    span.last,
    null,
    null,
  ]);
}

export async function writeRecoveredStore(input: OutputInput): Promise<OutputReport> {
  const searchPath = join(input.scratchDir, "output-search.db");
  const spoolDir = join(input.scratchDir, "output-spool");
  const store = await Store.open({
    path: input.path,
    searchPath,
    spoolDir,
    profile: input.profile,
    integrityCheckTimeoutMs: 0,
  });
  const rejected: RejectedRow[] = [];
  const written = { sessions: 0, placeholder_sessions: 0, messages: 0, turns: 0, records: 0 };
  const spool: OutputReport["spool"] = { records: 0, ops: 0, messages: 0, duplicates: 0, failed: [] };
  let storeId = "";
  const db = new Database(input.path, { timeout: 5000 });
  try {
    written.sessions = insertRows(db, "sessions", input.rows.sessions, rejected);
    const extra = placeholders(input.rows.sessions, input.rows.messages, input.records, input.now);
    const addPlaceholder = db.prepare(
      `INSERT INTO sessions (${TABLE_COLUMNS.sessions.join(", ")}) VALUES (${TABLE_COLUMNS.sessions.map(() => "?").join(", ")})`,
    );
    db.transaction(() => {
      for (const values of extra) written.placeholder_sessions += addPlaceholder.run(...values).changes;
    })();
    written.messages = insertRows(db, "messages", input.rows.messages, rejected);
    written.turns = insertRows(db, "turns", input.rows.turns, rejected);
    written.records = insertRecords(db, input.records, rejected);

    for (const record of input.spool.records) {
      try {
        const result = await store.replay([record]);
        spool.records++;
        spool.ops += result.ops;
        spool.messages += result.messages;
        spool.duplicates += result.duplicates;
      } catch (error) {
        spool.failed.push({ spooled_at: record.spooled_at, reason: (error as Error).message });
      }
    }

    // The scratch index must not take the queue: the restored store's own index is built from it
    // (stopping the indexer also keeps store.close() from flushing into the scratch file).
    store.index.stop();
    const meta = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
    db.transaction(() => {
      db.prepare("DELETE FROM search_queue").run();
      db.prepare(
        "INSERT INTO search_queue (message_id, op) SELECT id, 'index' FROM messages ORDER BY id",
      ).run();
      meta.run("recovered_from", input.source);
      meta.run("recovered_at", new Date(input.now).toISOString());
      meta.run("recovered_spool_files", JSON.stringify(input.spool.files));
      meta.run("recovered_spool_bytes", JSON.stringify(input.spool.bytes));
      meta.run("recovered_source_sha256", JSON.stringify(input.sourceDigest));
      if (input.sourceStoreId !== null) meta.run("recovered_source_store_id", input.sourceStoreId);
    })();
    storeId = db.prepare("SELECT value FROM meta WHERE key = 'store_id'").pluck().get() as string;
  } finally {
    db.close();
    store.close();
  }
  const integrity = await checkIntegrity(input.path, { mode: "full", timeoutMs: 10 * 60_000 });
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(searchPath + suffix, { force: true });
  if (existsSync(spoolDir) && readdirSync(spoolDir).length === 0) rmSync(spoolDir, { recursive: true });
  return { path: input.path, store_id: storeId, written, rejected, spool, integrity };
}
