// The tables recovery salvages, their columns in schema order (see migrations.ts), and how a raw
// record found on a page is told apart from the others by its shape alone: the column count and the
// kinds of its key columns. `records` is a WITHOUT ROWID table: its rows live in an index b-tree,
// keyed by (kind, key) instead of a rowid.

/** A value as SQLite stores it; integers beyond 2^53 stay bigint so nothing is rounded. */
export type SqlValue = null | number | bigint | string | Buffer;

export type ValueKind = "null" | "int" | "float" | "text" | "blob";

/** The tables whose rows are found by rowid. */
export type RowidTable = "sessions" | "messages" | "turns";

export const ROWID_TABLES: readonly RowidTable[] = ["sessions", "messages", "turns"];

/** Every table recovery salvages, in the order reports list them. */
export type TableName = RowidTable | "records";

export const TABLES: readonly TableName[] = [...ROWID_TABLES, "records"];

export type PerRowidTable<T> = Record<RowidTable, T>;

export function perRowidTable<T>(make: (table: RowidTable) => T): PerRowidTable<T> {
  return { sessions: make("sessions"), messages: make("messages"), turns: make("turns") };
}

export const TABLE_COLUMNS: Record<RowidTable, readonly string[]> = {
  sessions: [
    "id",
    "title",
    "source",
    "model",
    "parent_session_id",
    "created_at",
    "updated_at",
    "metadata",
    // Since schema 5; a row stored before it has the eight columns above (padded with null).
    "conversation_hash",
  ],
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
    // Since schema 7; a row stored before it has the ten columns above (padded with 0, see PAD).
    "lease_epoch",
  ],
};

/** What a column a row was stored without is padded with, when not null (a NOT NULL column's default). */
const PAD: Readonly<Record<string, SqlValue>> = { lease_epoch: 0 };

/** The value of a column a row (or a whole table) was stored without. */
export function missingValue(column: string): SqlValue {
  return PAD[column] ?? null;
}

/** One row as salvaged: its rowid and its values in schema order (messages[0] is the rowid itself). */
export interface SalvagedRow {
  rowid: number;
  values: SqlValue[];
}

/** What a record on a table leaf with these column kinds is: one of our tables, a meta entry, or other. */
export function classifyShape(kinds: readonly ValueKind[]): RowidTable | "meta" | null {
  switch (kinds.length) {
    case 12:
      // The INTEGER PRIMARY KEY is stored as NULL; its value is the cell's rowid.
      return kinds[0] === "null" && kinds[1] === "text" && kinds[2] === "text" ? "messages" : null;
    case 8:
      return kinds[0] === "text" ? "sessions" : null;
    case 9:
      // A session since schema 5. The responses table has nine columns too, but its sixth is text
      // where a session's created_at and updated_at are integers.
      return kinds[0] === "text" && kinds[5] === "int" && kinds[6] === "int" ? "sessions" : null;
    case 10:
    // A turn since schema 7 (lease_epoch). No other table has eleven columns.
    case 11:
      return kinds[0] === "text" && kinds[1] === "text" ? "turns" : null;
    case 2:
      return kinds[0] === "text" && kinds[1] === "text" ? "meta" : null;
    default:
      return null;
  }
}

/** A row's values as wide as its table today: a row stored before a column was added gets null there. */
export function padValues(table: RowidTable, values: SqlValue[]): SqlValue[] {
  const columns = TABLE_COLUMNS[table];
  while (values.length < columns.length) values.push(missingValue(columns[values.length] ?? ""));
  return values;
}

/** The identity a row keeps across stores: a message's uid, a session's or turn's id. */
export function rowKey(table: RowidTable, values: readonly SqlValue[]): string | null {
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

/** The columns of `records`, in the order its rows are stored (the primary key, kind and key, first). */
export const RECORD_COLUMNS = ["kind", "key", "session_id", "value", "updated_at"] as const;

/**
 * Whether an entry of an index b-tree with these column kinds is a row of `records`. No index of
 * the schema has five columns (the index on session_id has three: session_id, kind, key), and the
 * schema's own rows, also five columns but with an integer fourth, sit on table leaves.
 */
export function isRecordShape(kinds: readonly ValueKind[]): boolean {
  const textOrNull = (k: ValueKind | undefined) => k === "text" || k === "null";
  return (
    kinds.length === 5 &&
    kinds[0] === "text" &&
    kinds[1] === "text" &&
    textOrNull(kinds[2]) &&
    textOrNull(kinds[3]) &&
    kinds[4] === "int"
  );
}

/** The identity of a records row: its primary key. */
export interface RecordKey {
  kind: string;
  key: string;
}

/** A row of `records`: its identity (kind, key) and its values in RECORD_COLUMNS order. */
export interface SalvagedRecord extends RecordKey {
  /** recordId(kind, key): one string per identity, for maps. */
  id: string;
  sessionId: string | null;
  updatedAt: number;
  values: SqlValue[];
}

export const recordId = (kind: string, key: string): string => JSON.stringify([kind, key]);

/** A records row from its values, or null when they do not have the table's shape. */
export function toRecord(values: readonly SqlValue[]): SalvagedRecord | null {
  const [kind, key, sessionId, value, updatedAt] = values;
  if (values.length !== RECORD_COLUMNS.length || typeof kind !== "string" || typeof key !== "string")
    return null;
  if (sessionId !== null && typeof sessionId !== "string") return null;
  if (value !== null && typeof value !== "string") return null;
  const at = intValue(updatedAt);
  if (at === null || sessionId === undefined) return null;
  return { id: recordId(kind, key), kind, key, sessionId, updatedAt: at, values: [...values] };
}
