// Read queries shared by the writing store and read-only readers. Every row passes through the
// checks in rows.ts, so one bad row never takes a listing down.
import { statSync } from "node:fs";
import type Database from "better-sqlite3";
import { ERROR_MAX_CHARS } from "./last-turn.js";
import {
  type MessageView,
  type SessionView,
  type TurnView,
  toMessageView,
  toSessionView,
  toTurnView,
} from "./rows.js";

/**
 * The hot reads of a turn (its session, transcript, turns, records) run on every model call:
 * their statements are prepared once per connection, not on every call.
 */
const statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

function prepared(db: Database.Database, sql: string, pluck = false): Database.Statement {
  let byConnection = statements.get(db);
  if (byConnection === undefined) {
    byConnection = new Map();
    statements.set(db, byConnection);
  }
  const key = `${pluck ? "pluck" : "rows"} ${sql}`;
  let statement = byConnection.get(key);
  if (statement === undefined) {
    statement = pluck ? db.prepare(sql).pluck() : db.prepare(sql);
    byConnection.set(key, statement);
  }
  return statement;
}

/** Enough of the first user message for a title (TITLE_MAX_CHARS) once its spaces are folded. */
const FIRST_MESSAGE_CHARS = 400;

export interface ListOptions {
  limit?: number;
  offset?: number;
}

/**
 * A session with what every listing shows beside it, each an index lookup: its message count; the
 * start of its first user message, only while it has no title (the fallback title, see
 * session-title.ts; the text of a multi-part message is its text parts); and its last turn, in
 * getTurns's order. Only version 1 columns: a reader may open an old store.
 */
const SESSION_COLUMNS = `s.id, s.title, s.source, s.model, s.parent_session_id, s.created_at, s.updated_at, s.metadata,
  (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
  CASE WHEN s.title IS NULL OR trim(s.title, char(32, 9, 10, 13)) = '' THEN (
    SELECT CASE
      WHEN m.content_kind = 'parts' AND typeof(m.content) = 'text' AND json_valid(m.content) THEN (
        SELECT substr(group_concat(json_extract(p.value, '$.text'), ' '), 1, ${FIRST_MESSAGE_CHARS})
        FROM json_each(m.content) p WHERE p.type = 'object')
      ELSE substr(m.content, 1, ${FIRST_MESSAGE_CHARS}) END
    FROM messages m WHERE m.session_id = s.id AND m.role = 'user' ORDER BY m.seq LIMIT 1
  ) END AS first_user_text,
  t.id AS last_turn_id, t.status AS last_turn_status, t.interrupt_count AS last_turn_interrupts,
  substr(t.error, 1, ${ERROR_MAX_CHARS}) AS last_turn_error`;

const SESSION_FROM = `sessions s LEFT JOIN turns t ON t.rowid = (
  SELECT rowid FROM turns WHERE session_id = s.id ORDER BY started_at DESC, rowid DESC LIMIT 1)`;

export function listSessions(db: Database.Database, options: ListOptions = {}): SessionView[] {
  // ORDER BY the rowid as a tiebreak keeps the listing stable when timestamps are equal or broken.
  const rows = prepared(
    db,
    `SELECT ${SESSION_COLUMNS} FROM ${SESSION_FROM} ORDER BY s.updated_at DESC, s.rowid DESC LIMIT ? OFFSET ?`,
  ).all(options.limit ?? 50, options.offset ?? 0) as Record<string, unknown>[];
  return rows.map(toSessionView);
}

export function getSession(db: Database.Database, id: string): SessionView | null {
  const row = prepared(db, `SELECT ${SESSION_COLUMNS} FROM ${SESSION_FROM} WHERE s.id = ?`).get(id) as
    | Record<string, unknown>
    | undefined;
  return row ? toSessionView(row) : null;
}

/**
 * The newest session whose conversation fingerprint is `hash` (schema 5; the writer's store only,
 * which is always migrated). Indexed: one lookup, whatever the number of sessions.
 */
export function findConversation(db: Database.Database, hash: string): string | null {
  const id = prepared(
    db,
    "SELECT id FROM sessions WHERE conversation_hash = ? ORDER BY updated_at DESC, rowid DESC LIMIT 1",
    true,
  ).get(hash);
  return typeof id === "string" ? id : null;
}

export function conversationHash(db: Database.Database, sessionId: string): string | null {
  const hash = prepared(db, "SELECT conversation_hash FROM sessions WHERE id = ?", true).get(sessionId);
  return typeof hash === "string" ? hash : null;
}

/** Sessions whose id starts with the given prefix (so users can type a short id). */
export function findSessionIds(db: Database.Database, prefix: string, limit = 5): string[] {
  const escaped = prefix.replace(/[\\%_]/g, (c) => `\\${c}`);
  return db
    .prepare("SELECT id FROM sessions WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?")
    .pluck()
    .all(`${escaped}%`, limit) as string[];
}

export function getMessages(db: Database.Database, sessionId: string): MessageView[] {
  const rows = prepared(db, "SELECT * FROM messages WHERE session_id = ? ORDER BY seq").all(
    sessionId,
  ) as Record<string, unknown>[];
  return rows.map(toMessageView);
}

export function getMessagesByIds(db: Database.Database, ids: readonly number[]): Map<number, MessageView> {
  const out = new Map<number, MessageView>();
  const stmt = db.prepare("SELECT * FROM messages WHERE id = ?");
  for (const id of ids) {
    const row = stmt.get(id) as Record<string, unknown> | undefined;
    if (row) out.set(id, toMessageView(row));
  }
  return out;
}

export function getTurns(db: Database.Database, sessionId: string): TurnView[] {
  const rows = prepared(db, "SELECT * FROM turns WHERE session_id = ? ORDER BY started_at, rowid").all(
    sessionId,
  ) as Record<string, unknown>[];
  return rows.map(toTurnView);
}

/** Turns still marked running, oldest first: live ones, or ones whose process died. */
export function runningTurns(db: Database.Database): TurnView[] {
  const rows = db
    .prepare("SELECT * FROM turns WHERE status = 'running' ORDER BY started_at, rowid")
    .all() as Record<string, unknown>[];
  return rows.map(toTurnView);
}

/** Turns marked interrupted that `owner` was running, started at or after `since`. */
export function interruptedTurnsOf(db: Database.Database, owner: string, since: number): TurnView[] {
  const rows = db
    .prepare(
      "SELECT * FROM turns WHERE status = 'interrupted' AND lease_owner = ? AND started_at >= ? ORDER BY started_at, rowid",
    )
    .all(owner, since) as Record<string, unknown>[];
  return rows.map(toTurnView);
}

export interface StoreStats {
  path: string;
  profile: string | null;
  schema_version: number;
  sessions: number;
  messages: number;
  turns: Record<string, number>;
  search_pending: number;
  bytes: { database: number; wal: number };
  bad_rows: { sessions: number; messages: number };
  oldest_session_at: number | null;
  newest_session_at: number | null;
}

const MAX_TIME = 253_402_300_799_999;
const BAD_TIME = (col: string) => `(typeof(${col}) != 'integer' OR ${col} < 0 OR ${col} > ${MAX_TIME})`;

export function storeStats(db: Database.Database, path: string): StoreStats {
  const one = (sql: string) => db.prepare(sql).pluck().get() as number;
  const turns: Record<string, number> = {};
  for (const row of db.prepare("SELECT status, count(*) AS n FROM turns GROUP BY status").all() as {
    status: string;
    n: number;
  }[]) {
    turns[String(row.status)] = row.n;
  }
  const size = (p: string) => {
    try {
      return statSync(p).size;
    } catch {
      return 0;
    }
  };
  const range = db
    .prepare(
      `SELECT min(created_at) AS oldest, max(created_at) AS newest FROM sessions WHERE NOT ${BAD_TIME("created_at")}`,
    )
    .get() as { oldest: number | null; newest: number | null };
  return {
    path,
    profile:
      (db.prepare("SELECT value FROM meta WHERE key = 'profile'").pluck().get() as string | undefined) ??
      null,
    schema_version: db.pragma("user_version", { simple: true }) as number,
    sessions: one("SELECT count(*) FROM sessions"),
    messages: one("SELECT count(*) FROM messages"),
    turns,
    search_pending: one("SELECT count(*) FROM search_queue"),
    bytes: { database: size(path), wal: size(`${path}-wal`) },
    bad_rows: {
      sessions: one(
        `SELECT count(*) FROM sessions WHERE ${BAD_TIME("created_at")} OR ${BAD_TIME("updated_at")} OR (metadata IS NOT NULL AND NOT json_valid(metadata))`,
      ),
      messages: one(
        `SELECT count(*) FROM messages WHERE ${BAD_TIME("created_at")} OR (tool_calls IS NOT NULL AND NOT json_valid(tool_calls))`,
      ),
    },
    oldest_session_at: range.oldest,
    newest_session_at: range.newest,
  };
}

export interface RecordView<T = unknown> {
  kind: string;
  key: string;
  session_id: string | null;
  value: T;
  updated_at: number;
}

/** Connections known to have the records table: it is never dropped, so once seen it is asked no more. */
const withRecords = new WeakSet<Database.Database>();

function hasRecords(db: Database.Database): boolean {
  if (withRecords.has(db)) return true;
  // A store of schema version 1 or 2 read by a newer reader has no records table yet (until a
  // newer process migrates it: a missing table is looked for again on the next read).
  const found =
    prepared(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'", true).get() !==
    undefined;
  if (found) withRecords.add(db);
  return found;
}

function parseValue<T>(text: unknown): T | null {
  if (typeof text !== "string") return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

export function getRecord<T>(db: Database.Database, kind: string, key: string): T | null {
  if (!hasRecords(db)) return null;
  const text = prepared(db, "SELECT value FROM records WHERE kind = ? AND key = ?", true).get(kind, key);
  return parseValue<T>(text);
}

/** A kind's records' count and newest update, deletions included: changes whenever one is written. */
export function recordStamp(db: Database.Database, kind: string): string {
  if (!hasRecords(db)) return "0:0";
  const row = prepared(db, "SELECT count(*) AS n, max(updated_at) AS at FROM records WHERE kind = ?").get(
    kind,
  ) as {
    n: number;
    at: number | null;
  };
  return `${row.n}:${row.at ?? 0}`;
}

/** One record's stored JSON text, or null: what a record.claim compares with. */
/**
 * Each live record of a kind, by key: a version (its updated_at and the length of its value) that
 * changes whenever the record is written with new content, without reading or parsing the values.
 */
export function recordVersions(db: Database.Database, kind: string): Map<string, string> {
  const versions = new Map<string, string>();
  if (!hasRecords(db)) return versions;
  const rows = prepared(
    db,
    "SELECT key, updated_at || ':' || length(value) AS version FROM records WHERE kind = ? AND value IS NOT NULL",
  )
    .raw()
    .all(kind) as [string, string][];
  for (const [key, version] of rows) versions.set(key, version);
  return versions;
}

export function getRecordText(db: Database.Database, kind: string, key: string): string | null {
  if (!hasRecords(db)) return null;
  const text = prepared(db, "SELECT value FROM records WHERE kind = ? AND key = ?", true).get(kind, key);
  return typeof text === "string" ? text : null;
}

export function listRecords<T>(db: Database.Database, kind: string, sessionId?: string): RecordView<T>[] {
  if (!hasRecords(db)) return [];
  const rows = (
    sessionId === undefined
      ? db
          .prepare("SELECT * FROM records WHERE kind = ? AND value IS NOT NULL ORDER BY updated_at, key")
          .all(kind)
      : db
          .prepare(
            "SELECT * FROM records WHERE kind = ? AND session_id = ? AND value IS NOT NULL ORDER BY updated_at, key",
          )
          .all(kind, sessionId)
  ) as Record<string, unknown>[];
  return rows.flatMap((row) => {
    const value = parseValue<T>(row.value);
    if (value === null) return [];
    return [
      {
        kind: String(row.kind),
        key: String(row.key),
        session_id: typeof row.session_id === "string" ? row.session_id : null,
        value,
        updated_at: Number(row.updated_at),
      },
    ];
  });
}
