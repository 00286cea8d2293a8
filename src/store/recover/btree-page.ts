// Reading one b-tree page of a SQLite file by hand (layout from sqlite.org/fileformat2.html): its
// header, its cell pointers and the cells of table and index pages. The bytes may be garbage, so every offset
// and count is checked against the page before it is used; a bad page is reported, never thrown.

export type BtreeKind = "table-leaf" | "table-interior" | "index-leaf" | "index-interior";

export interface BtreePage {
  kind: BtreeKind;
  /** Offsets of the cells within the page, in key order. */
  cells: number[];
  /** For interior pages: the right-most child. */
  rightChild: number;
}

export interface Varint {
  value: bigint;
  next: number;
}

/** A SQLite varint (1 to 9 bytes, big-endian, 7 bits a byte and 8 in the ninth), or null if cut off. */
export function readVarint(buf: Uint8Array, pos: number, end: number): Varint | null {
  let value = 0n;
  for (let i = 0; i < 9; i++) {
    if (pos + i >= end) return null;
    const byte = buf[pos + i] ?? 0;
    if (i === 8) return { value: BigInt.asIntN(64, (value << 8n) | BigInt(byte)), next: pos + 9 };
    value = (value << 7n) | BigInt(byte & 0x7f);
    if ((byte & 0x80) === 0) return { value: BigInt.asIntN(64, value), next: pos + i + 1 };
  }
  return null;
}

/** A varint that must be a small non-negative size (a length, a serial type). */
export function readSize(buf: Uint8Array, pos: number, end: number, max: number): Varint | null {
  const v = readVarint(buf, pos, end);
  if (v === null || v.value < 0n || v.value > BigInt(max)) return null;
  return v;
}

const KINDS: Record<number, BtreeKind> = {
  2: "index-interior",
  5: "table-interior",
  10: "index-leaf",
  13: "table-leaf",
};

/**
 * Parse a page's b-tree header and cell pointers. Returns null when the page is not a well-formed
 * b-tree page: unknown flag, pointers outside the cell content area, a broken freeblock chain.
 */
export function parseBtreePage(page: Uint8Array, pgno: number, usable: number): BtreePage | null {
  const base = pgno === 1 ? 100 : 0;
  if (page.length < usable || usable < 480 || base + 12 > usable) return null;
  const kind = KINDS[page[base] ?? 0];
  if (kind === undefined) return null;
  const headerSize = kind === "table-leaf" || kind === "index-leaf" ? 8 : 12;
  const view = Buffer.from(page.buffer, page.byteOffset, page.length);
  const firstFreeblock = view.readUInt16BE(base + 1);
  const cellCount = view.readUInt16BE(base + 3);
  const rawStart = view.readUInt16BE(base + 5);
  const contentStart = rawStart === 0 ? 65536 : rawStart;
  const fragmented = page[base + 7] ?? 0;
  const pointersEnd = base + headerSize + 2 * cellCount;
  if (pointersEnd > usable || contentStart > usable || fragmented > 60) return null;
  if (cellCount > 0 && contentStart < pointersEnd) return null;
  const rightChild = headerSize === 12 ? view.readUInt32BE(base + 8) : 0;
  if (headerSize === 12 && rightChild === 0) return null;
  const cells: number[] = [];
  for (let i = 0; i < cellCount; i++) {
    const at = view.readUInt16BE(base + headerSize + 2 * i);
    if (at < contentStart || at < pointersEnd || at >= usable) return null;
    cells.push(at);
  }
  if (!freeblocksValid(view, firstFreeblock, pointersEnd, usable)) return null;
  return { kind, cells, rightChild };
}

/** Freeblocks form a chain of increasing offsets inside the content area; garbage rarely does. */
function freeblocksValid(view: Buffer, first: number, pointersEnd: number, usable: number): boolean {
  let at = first;
  let steps = 0;
  let lastEnd = pointersEnd;
  while (at !== 0) {
    if (at < lastEnd || at + 4 > usable || ++steps > usable / 4) return false;
    const size = view.readUInt16BE(at + 2);
    if (size < 4 || at + size > usable) return false;
    lastEnd = at + size;
    at = view.readUInt16BE(at);
  }
  return true;
}

/** A cell's payload as the page holds it: the local part and where the rest continues. */
export interface PayloadCell {
  payloadSize: number;
  /** The part of the payload stored on this page. */
  local: Uint8Array;
  /** First overflow page, or 0 when the payload is all local. */
  overflow: number;
  /** Where the cell ends on the page (for overlap checks). */
  end: number;
}

export interface TableLeafCell extends PayloadCell {
  rowid: bigint;
}

/** Largest payload SQLite writes (its default SQLITE_MAX_LENGTH); more is garbage. */
const MAX_PAYLOAD = 1_000_000_000;

/** How much of a payload of this size a table leaf keeps on the page itself. */
export function localPayloadSize(payload: number, usable: number): number {
  const maxLocal = usable - 35;
  if (payload <= maxLocal) return payload;
  const minLocal = Math.floor(((usable - 12) * 32) / 255) - 23;
  const k = minLocal + ((payload - minLocal) % (usable - 4));
  return k <= maxLocal ? k : minLocal;
}

/** How much of a payload of this size an index page (leaf or interior) keeps on the page itself. */
export function indexLocalPayloadSize(payload: number, usable: number): number {
  const maxLocal = Math.floor(((usable - 12) * 64) / 255) - 23;
  if (payload <= maxLocal) return payload;
  const minLocal = Math.floor(((usable - 12) * 32) / 255) - 23;
  const k = minLocal + ((payload - minLocal) % (usable - 4));
  return k <= maxLocal ? k : minLocal;
}

/** The payload that starts at `start`, `local` bytes of it here, then the first overflow page. */
function payloadAt(
  page: Uint8Array,
  start: number,
  payloadSize: number,
  local: number,
  usable: number,
): PayloadCell | null {
  const spills = local < payloadSize;
  const end = start + local + (spills ? 4 : 0);
  if (end > usable) return null;
  const overflow = spills
    ? Buffer.from(page.buffer, page.byteOffset, page.length).readUInt32BE(start + local)
    : 0;
  if (spills && overflow === 0) return null;
  return { payloadSize, local: page.subarray(start, start + local), overflow, end };
}

/** Decode the table-leaf cell at `at`, or null when it does not fit the page. */
export function readTableLeafCell(page: Uint8Array, at: number, usable: number): TableLeafCell | null {
  const size = readSize(page, at, usable, MAX_PAYLOAD);
  if (size === null) return null;
  const rowid = readVarint(page, size.next, usable);
  if (rowid === null) return null;
  const payloadSize = Number(size.value);
  const cell = payloadAt(page, rowid.next, payloadSize, localPayloadSize(payloadSize, usable), usable);
  return cell === null ? null : { ...cell, rowid: rowid.value };
}

/**
 * Decode the cell at `at` of an index page, or null when it does not fit the page. An interior
 * cell starts with its left child's page number; both kinds then hold a whole entry (in a WITHOUT
 * ROWID table, a whole row), since an index b-tree keeps each entry exactly once.
 */
export function readIndexCell(
  page: Uint8Array,
  at: number,
  usable: number,
  interior: boolean,
): PayloadCell | null {
  const start = interior ? at + 4 : at;
  const size = readSize(page, start, usable, MAX_PAYLOAD);
  if (size === null) return null;
  const payloadSize = Number(size.value);
  return payloadAt(page, size.next, payloadSize, indexLocalPayloadSize(payloadSize, usable), usable);
}

/** The cells that parse and do not overlap one another; the rest are damage. */
export function goodCells<C extends PayloadCell>(
  offsets: readonly number[],
  read: (at: number) => C | null,
): { cells: C[]; bad: number } {
  const parsed = offsets.map((at) => ({ at, cell: read(at) }));
  const byOffset = [...parsed].sort((a, b) => a.at - b.at);
  const overlapping = new Set<number>();
  for (let i = 1; i < byOffset.length; i++) {
    const prev = byOffset[i - 1];
    const cur = byOffset[i];
    if (prev?.cell && cur && prev.cell.end > cur.at) {
      overlapping.add(prev.at);
      overlapping.add(cur.at);
    }
  }
  const cells: C[] = [];
  for (const { at, cell } of parsed) if (cell !== null && !overlapping.has(at)) cells.push(cell);
  return { cells, bad: offsets.length - cells.length };
}
