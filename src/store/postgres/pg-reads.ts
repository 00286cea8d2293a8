// Read queries of the PostgreSQL store, returning the same views as SQLite's (rows.ts,
// response-rows.ts, queries.ts): each row passes the same checks, so a caller cannot tell the
// engines apart by what it reads.
import type pg from "pg";
import { ERROR_MAX_CHARS } from "../last-turn.js";
import type { ListOptions, RecordView } from "../queries.js";
import {
  type MessageView,
  type SessionView,
  type TurnView,
  toMessageView,
  toSessionView,
  toTurnView,
} from "../rows.js";

/** Runs one statement and returns its rows (the store wraps it to tell when the engine is down). */
export type Query = <R extends pg.QueryResultRow = Record<string, unknown>>(
  sql: string,
  values?: unknown[],
) => Promise<R[]>;

/** Enough of the first user message for a title, as SQLite's listing takes. */
const FIRST_MESSAGE_CHARS = 400;

export const MESSAGE_COLUMNS =
  "id, uid, session_id, seq, role, content, content_kind, tool_calls, tool_call_id, name, turn_id, created_at";

const TURN_COLUMNS =
  "id, session_id, status, started_at, ended_at, lease_owner, lease_expires_at, heartbeat_at, interrupt_count, error, lease_epoch";

const SESSION_SELECT = `SELECT s.id, s.title, s.source, s.model, s.parent_session_id, s.created_at, s.updated_at,
    s.metadata, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) AS message_count,
    fu.content AS first_user_content, fu.content_kind AS first_user_kind,
    t.id AS last_turn_id, t.status AS last_turn_status, t.interrupt_count AS last_turn_interrupts,
    substr(t.error, 1, ${ERROR_MAX_CHARS}) AS last_turn_error
  FROM sessions s
  LEFT JOIN LATERAL (SELECT m.content, m.content_kind FROM messages m
    WHERE m.session_id = s.id AND m.role = 'user' AND (s.title IS NULL OR btrim(s.title, E' \\t\\n\\r') = '')
    ORDER BY m.seq LIMIT 1) fu ON true
  LEFT JOIN LATERAL (SELECT id, status, interrupt_count, error FROM turns
    WHERE session_id = s.id ORDER BY started_at DESC, row_no DESC LIMIT 1) t ON true`;

/** The text of a multi-part message's parts, as SQLite's listing takes it (null when there is none). */
function partsText(content: string): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return content;
  }
  if (typeof parsed !== "object" || parsed === null) return null;
  const texts = Object.values(parsed)
    .filter((p): p is Record<string, unknown> => typeof p === "object" && p !== null && !Array.isArray(p))
    .map((p) => p.text)
    .filter((t) => t !== null && t !== undefined && typeof t !== "object")
    .map(String);
  return texts.length === 0 ? null : texts.join(" ");
}

function sessionView(row: Record<string, unknown>): SessionView {
  const content = typeof row.first_user_content === "string" ? row.first_user_content : null;
  const text = content !== null && row.first_user_kind === "parts" ? partsText(content) : content;
  return toSessionView({ ...row, first_user_text: text?.slice(0, FIRST_MESSAGE_CHARS) ?? null });
}

export async function listSessions(q: Query, options: ListOptions = {}): Promise<SessionView[]> {
  const rows = await q(`${SESSION_SELECT} ORDER BY s.updated_at DESC, s.row_no DESC LIMIT $1 OFFSET $2`, [
    options.limit ?? 50,
    options.offset ?? 0,
  ]);
  return rows.map(sessionView);
}

export async function getSession(q: Query, id: string): Promise<SessionView | null> {
  const [row] = await q(`${SESSION_SELECT} WHERE s.id = $1`, [id]);
  return row ? sessionView(row) : null;
}

/** Session ids starting with `prefix`, in byte order (as SQLite's). */
export async function findSessionIds(q: Query, prefix: string, limit = 5): Promise<string[]> {
  const rows = await q<{ id: string }>(
    `SELECT id FROM sessions WHERE starts_with(id, $1) ORDER BY id COLLATE "C" LIMIT $2`,
    [prefix, limit],
  );
  return rows.map((r) => r.id);
}

export async function getMessages(q: Query, sessionId: string): Promise<MessageView[]> {
  const rows = await q(`SELECT ${MESSAGE_COLUMNS} FROM messages WHERE session_id = $1 ORDER BY seq`, [
    sessionId,
  ]);
  return rows.map(toMessageView);
}

export async function getTurns(q: Query, where: string, values: unknown[]): Promise<TurnView[]> {
  const rows = await q(
    `SELECT ${TURN_COLUMNS} FROM turns WHERE ${where} ORDER BY started_at, row_no`,
    values,
  );
  return rows.map(toTurnView);
}

function parseValue<T>(text: unknown): T | null {
  if (typeof text !== "string") return null;
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

export async function getRecordText(q: Query, kind: string, key: string): Promise<string | null> {
  const [row] = await q<{ value: string | null }>("SELECT value FROM records WHERE kind = $1 AND key = $2", [
    kind,
    key,
  ]);
  return typeof row?.value === "string" ? row.value : null;
}

export async function getRecord<T>(q: Query, kind: string, key: string): Promise<T | null> {
  return parseValue<T>(await getRecordText(q, kind, key));
}

export async function listRecords<T>(q: Query, kind: string, sessionId?: string): Promise<RecordView<T>[]> {
  const rows =
    sessionId === undefined
      ? await q("SELECT * FROM records WHERE kind = $1 AND value IS NOT NULL ORDER BY updated_at, key", [
          kind,
        ])
      : await q(
          "SELECT * FROM records WHERE kind = $1 AND session_id = $2 AND value IS NOT NULL ORDER BY updated_at, key",
          [kind, sessionId],
        );
  return rows.flatMap((row) => {
    const value = parseValue<T>(row.value);
    if (value === null) return [];
    const sessionIdOf = typeof row.session_id === "string" ? row.session_id : null;
    return [
      {
        kind: String(row.kind),
        key: String(row.key),
        session_id: sessionIdOf,
        value,
        updated_at: Number(row.updated_at),
      },
    ];
  });
}

/** A kind's records' count and newest update, deletions included: changes whenever one is written. */
export async function recordStamp(q: Query, kind: string): Promise<string> {
  const [row] = await q<{ n: number; at: number | null }>(
    "SELECT count(*) AS n, max(updated_at) AS at FROM records WHERE kind = $1",
    [kind],
  );
  return `${row?.n ?? 0}:${row?.at ?? 0}`;
}

/** Each live record's version by key: its updated_at and the length of its value (as SQLite's). */
export async function recordVersions(q: Query, kind: string): Promise<Map<string, string>> {
  const rows = await q<{ key: string; version: string }>(
    "SELECT key, updated_at || ':' || length(value) AS version FROM records WHERE kind = $1 AND value IS NOT NULL",
    [kind],
  );
  return new Map(rows.map((r) => [r.key, r.version]));
}
