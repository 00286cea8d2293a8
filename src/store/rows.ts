// Rows as read back from SQLite, checked one by one. A damaged or odd row (a timestamp stored as
// text or out of range, broken JSON) is returned with warnings instead of taking a listing down.
import { type LastTurn, lastTurn } from "./last-turn.js";
import { sessionTitle, type TitleSource } from "./session-title.js";

/** Largest plausible timestamp: the last millisecond of year 9999. */
const MAX_TIME_MS = 253_402_300_799_999;

export interface SessionView {
  id: string;
  /** Never empty: the stored title, else one made from the first user message (session-title.ts). */
  title: string;
  title_source: TitleSource;
  source: string;
  model: string | null;
  parent_session_id: string | null;
  created_at: number | null;
  updated_at: number | null;
  metadata: unknown;
  message_count: number;
  /** What became of its last turn; null when it never had one. */
  last_turn: LastTurn | null;
  warnings: string[];
}

export interface MessageView {
  id: number;
  uid: string;
  session_id: string;
  seq: number;
  role: string;
  content: string | null;
  content_kind: string;
  tool_calls: unknown[] | null;
  tool_call_id: string | null;
  name: string | null;
  turn_id: string | null;
  created_at: number | null;
  warnings: string[];
}

export interface TurnView {
  id: string;
  session_id: string;
  status: string;
  started_at: number | null;
  ended_at: number | null;
  lease_owner: string | null;
  lease_expires_at: number | null;
  heartbeat_at: number | null;
  interrupt_count: number;
  error: string | null;
  /** The lease epoch (store/lease-fence.ts); 0 for a turn stored before fencing. */
  lease_epoch: number;
  warnings: string[];
}

type Raw = Record<string, unknown>;

export function checkTime(raw: unknown, field: string, warnings: string[], optional = false): number | null {
  if (raw === null || raw === undefined) {
    if (!optional) warnings.push(`${field} is missing`);
    return null;
  }
  if (typeof raw === "bigint") raw = Number(raw);
  if (typeof raw !== "number") {
    warnings.push(`${field} is ${typeof raw} ${JSON.stringify(String(raw)).slice(0, 40)}, not a timestamp`);
    return null;
  }
  if (!Number.isFinite(raw) || raw < 0 || raw > MAX_TIME_MS) {
    warnings.push(`${field} ${raw} is out of range`);
    return null;
  }
  return Math.trunc(raw);
}

function text(raw: unknown, field: string, warnings: string[]): string | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === "string") return raw;
  if (Buffer.isBuffer(raw)) {
    warnings.push(`${field} is a blob, shown as text`);
    return raw.toString("utf8");
  }
  return String(raw);
}

function json(raw: unknown, field: string, warnings: string[]): unknown {
  const value = text(raw, field, warnings);
  if (value === null) return null;
  try {
    return JSON.parse(value);
  } catch {
    warnings.push(`${field} is not valid JSON: ${JSON.stringify(value.slice(0, 40))}`);
    return value;
  }
}

function int(raw: unknown, fallback: number): number {
  if (typeof raw === "number" && Number.isFinite(raw)) return Math.trunc(raw);
  if (typeof raw === "bigint") return Number(raw);
  return fallback;
}

export function toSessionView(row: Raw): SessionView {
  const warnings: string[] = [];
  const source = text(row.source, "source", warnings) ?? "?";
  const firstUser = text(row.first_user_text, "first user message", warnings);
  return {
    id: text(row.id, "id", warnings) ?? "",
    ...sessionTitle(text(row.title, "title", warnings), firstUser, source),
    source,
    model: text(row.model, "model", warnings),
    parent_session_id: text(row.parent_session_id, "parent_session_id", warnings),
    created_at: checkTime(row.created_at, "created_at", warnings),
    updated_at: checkTime(row.updated_at, "updated_at", warnings),
    metadata: json(row.metadata, "metadata", warnings),
    message_count: int(row.message_count, 0),
    last_turn:
      row.last_turn_id === null || row.last_turn_id === undefined
        ? null
        : lastTurn({
            id: text(row.last_turn_id, "last turn id", warnings) ?? "",
            status: text(row.last_turn_status, "last turn status", warnings) ?? "?",
            interrupt_count: int(row.last_turn_interrupts, 0),
            error: text(row.last_turn_error, "last turn error", warnings),
          }),
    warnings,
  };
}

export function toMessageView(row: Raw): MessageView {
  const warnings: string[] = [];
  const toolCalls = json(row.tool_calls, "tool_calls", warnings);
  if (toolCalls !== null && !Array.isArray(toolCalls) && typeof toolCalls !== "string") {
    warnings.push("tool_calls is not a list");
  }
  return {
    id: int(row.id, 0),
    uid: text(row.uid, "uid", warnings) ?? "",
    session_id: text(row.session_id, "session_id", warnings) ?? "",
    seq: int(row.seq, 0),
    role: text(row.role, "role", warnings) ?? "?",
    content: text(row.content, "content", warnings),
    content_kind: text(row.content_kind, "content_kind", warnings) ?? "text",
    tool_calls: Array.isArray(toolCalls) ? toolCalls : toolCalls === null ? null : [toolCalls],
    tool_call_id: text(row.tool_call_id, "tool_call_id", warnings),
    name: text(row.name, "name", warnings),
    turn_id: text(row.turn_id, "turn_id", warnings),
    created_at: checkTime(row.created_at, "created_at", warnings),
    warnings,
  };
}

export function toTurnView(row: Raw): TurnView {
  const warnings: string[] = [];
  return {
    id: text(row.id, "id", warnings) ?? "",
    session_id: text(row.session_id, "session_id", warnings) ?? "",
    status: text(row.status, "status", warnings) ?? "?",
    started_at: checkTime(row.started_at, "started_at", warnings),
    ended_at: checkTime(row.ended_at, "ended_at", warnings, true),
    lease_owner: text(row.lease_owner, "lease_owner", warnings),
    lease_expires_at: checkTime(row.lease_expires_at, "lease_expires_at", warnings, true),
    heartbeat_at: checkTime(row.heartbeat_at, "heartbeat_at", warnings, true),
    interrupt_count: int(row.interrupt_count, 0),
    error: text(row.error, "error", warnings),
    lease_epoch: int(row.lease_epoch, 0),
    warnings,
  };
}
