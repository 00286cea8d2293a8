// Decoding a SQLite record (a row's payload): a header of serial types, then the values. The header
// alone tells which table a record belongs to, so it is read first, before any overflow page; the
// values are decoded only once the whole payload is at hand and its size adds up exactly.
import { readSize } from "./btree-page.js";
import { narrowInt, type SqlValue, type ValueKind } from "./row-shapes.js";

export type TextEncoding = "utf8" | "utf16le" | "utf16be";

export interface RecordHeader {
  /** One serial type per column. */
  types: number[];
  kinds: ValueKind[];
  /** Bytes of header, where the values start. */
  headerSize: number;
  /** Bytes the values take, by the serial types. */
  bodySize: number;
}

/** SQLite allows at most 32767 columns; our tables have 12. */
const MAX_COLUMNS = 2000;

function serialSize(type: number): number {
  if (type <= 4) return type;
  if (type === 5) return 6;
  if (type === 6 || type === 7) return 8;
  if (type <= 11) return 0;
  return Math.floor((type - 12) / 2);
}

function serialKind(type: number): ValueKind | null {
  if (type === 0) return "null";
  if (type <= 6 || type === 8 || type === 9) return "int";
  if (type === 7) return "float";
  if (type === 10 || type === 11) return null;
  return type % 2 === 0 ? "blob" : "text";
}

/** Parse the record header from the start of a payload (which may be only its local part). */
export function readRecordHeader(payload: Uint8Array, payloadSize: number): RecordHeader | null {
  const first = readSize(payload, 0, payload.length, payloadSize);
  if (first === null) return null;
  const headerSize = Number(first.value);
  if (headerSize < first.next || headerSize > payload.length) return null;
  const types: number[] = [];
  const kinds: ValueKind[] = [];
  let bodySize = 0;
  let at = first.next;
  while (at < headerSize) {
    const t = readSize(payload, at, headerSize, 2 * 1_000_000_000 + 13);
    if (t === null || types.length >= MAX_COLUMNS) return null;
    const type = Number(t.value);
    const kind = serialKind(type);
    if (kind === null) return null;
    types.push(type);
    kinds.push(kind);
    bodySize += serialSize(type);
    at = t.next;
  }
  if (at !== headerSize || headerSize + bodySize !== payloadSize) return null;
  return { types, kinds, headerSize, bodySize };
}

/** Decode every value of a complete payload whose header was read by readRecordHeader. */
export function readRecordValues(
  payload: Uint8Array,
  header: RecordHeader,
  encoding: TextEncoding,
): SqlValue[] {
  const view = Buffer.from(payload.buffer, payload.byteOffset, payload.length);
  const values: SqlValue[] = [];
  let at = header.headerSize;
  for (const type of header.types) {
    const size = serialSize(type);
    values.push(readValue(view, at, type, size, encoding));
    at += size;
  }
  return values;
}

/**
 * The first `count` values of a payload of which only `prefix` is at hand (the local part of a cell
 * whose overflow chain is broken), or null when they do not all lie within it.
 */
export function readLeadingValues(
  prefix: Uint8Array,
  header: RecordHeader,
  encoding: TextEncoding,
  count: number,
): SqlValue[] | null {
  const types = header.types.slice(0, count);
  let end = header.headerSize;
  for (const type of types) end += serialSize(type);
  if (types.length < count || end > prefix.length) return null;
  return readRecordValues(prefix, { ...header, types }, encoding);
}

function readValue(view: Buffer, at: number, type: number, size: number, encoding: TextEncoding): SqlValue {
  switch (type) {
    case 0:
      return null;
    case 1:
      return view.readInt8(at);
    case 2:
      return view.readInt16BE(at);
    case 3:
      return view.readIntBE(at, 3);
    case 4:
      return view.readInt32BE(at);
    case 5:
      return view.readIntBE(at, 6);
    case 6:
      return narrowInt(view.readBigInt64BE(at));
    case 7:
      return view.readDoubleBE(at);
    case 8:
      return 0;
    case 9:
      return 1;
  }
  const bytes = view.subarray(at, at + size);
  if (type % 2 === 0) return Buffer.from(bytes);
  if (encoding === "utf8") return bytes.toString("utf8");
  if (encoding === "utf16le") return bytes.toString("utf16le");
  const even = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2)));
  return even.swap16().toString("utf16le");
}
