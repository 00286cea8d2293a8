// The tables recovery salvages, their columns in schema order (see migrations.ts), and how a raw
// record found on a page is told apart from the others by its shape alone: the column count and the
// kinds of its key columns.

/** A value as SQLite stores it; integers beyond 2^53 stay bigint so nothing is rounded. */
export type SqlValue = null | number | bigint | string | Buffer;

export type ValueKind = "null" | "int" | "float" | "text" | "blob";

export type TableName = "sessions" | "messages" | "turns";

export const TABLES: readonly TableName[] = ["sessions", "messages", "turns"];

export type PerTable<T> = Record<TableName, T>;

export function perTable<T>(make: (table: TableName) => T): PerTable<T> {
  return { sessions: make("sessions"), messages: make("messages"), turns: make("turns") };
}

export const TABLE_COLUMNS: Record<TableName, readonly string[]> = {
  sessions: ["id", "title", "source", "model", "parent_session_id", "created_at", "updated_at", "metadata"],
  messages: [
    "id",
    "uid",
    "session_id",
    "seq",
    "role",
    "content",
    "content_kind",
    "tool_calls",
    "tool_call_id",
    "name",
    "turn_id",
    "created_at",
  ],
  turns: [
    "id",
    "session_id",
    "status",
    "started_at",
    "ended_at",
    "lease_owner",
    "lease_expires_at",
    "heartbeat_at",
    "interrupt_count",
    "error",
  ],
};

/** One row as salvaged: its rowid and its values in schema order (messages[0] is the rowid itself). */
export interface SalvagedRow {
  rowid: number;
  values: SqlValue[];
}

/** What a record with these column kinds is: one of our tables, a meta entry, or something else. */
export function classifyShape(kinds: readonly ValueKind[]): TableName | "meta" | null {
  switch (kinds.length) {
    case 12:
      // The INTEGER PRIMARY KEY is stored as NULL; its value is the cell's rowid.
      return kinds[0] === "null" && kinds[1] === "text" && kinds[2] === "text" ? "messages" : null;
    case 8:
      return kinds[0] === "text" ? "sessions" : null;
    case 10:
      return kinds[0] === "text" && kinds[1] === "text" ? "turns" : null;
    case 2:
      return kinds[0] === "text" && kinds[1] === "text" ? "meta" : null;
    default:
      return null;
  }
}

export function kindOf(value: SqlValue): ValueKind {
  if (value === null) return "null";
  if (typeof value === "string") return "text";
  if (typeof value === "number") return Number.isInteger(value) ? "int" : "float";
  if (typeof value === "bigint") return "int";
  return "blob";
}

/** The identity a row keeps across stores: a message's uid, a session's or turn's id. */
export function rowKey(table: TableName, values: readonly SqlValue[]): string | null {
  const key = table === "messages" ? values[1] : values[0];
  return typeof key === "string" ? key : null;
}

/** A bigint as a number when that loses nothing. */
export function narrowInt(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/** An integer column as a plain number, or null when it is not one. */
export function intValue(value: SqlValue | undefined): number | null {
  if (typeof value === "number" && Number.isSafeInteger(value)) return value;
  return null;
}
