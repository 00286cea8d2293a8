// Page-level salvage: every table leaf page of the image that is not on the freelist, decoded cell
// by cell, each record assigned to a table by its shape. This reaches rows SQL cannot, such as the
// leaves under a garbage root or interior page. A cell whose overflow chain is broken loses only
// its own row, and is remembered as found.
import { parseBtreePage, readTableLeafCell, type TableLeafCell } from "./btree-page.js";
import { type Freelist, readFreelist } from "./freelist.js";
import type { PageImage } from "./page-image.js";
import { type RecordHeader, readRecordHeader, readRecordValues } from "./record.js";
import { classifyShape, type PerTable, perTable, type SalvagedRow } from "./row-shapes.js";

export interface WalSummary {
  present: boolean;
  header_valid: boolean;
  frames: number;
  applied: number;
  /** Committed frames past a damaged frame, which cannot be applied. */
  stranded: number;
  problem: string | null;
}

export interface PageSalvage {
  pageSize: number;
  pageSizeFrom: "header" | "wal" | "guess";
  headerProblem: string | null;
  pageCount: number;
  wal: WalSummary;
  /** Pages present in the file that are neither a parseable b-tree page, an overflow page in use, nor free. */
  unreadable: number[];
  /** Pages past the end of a truncated file. */
  missing: number;
  freelist: Freelist;
  rows: PerTable<Map<number, SalvagedRow>>;
  /**
   * Rowids of cells seen on a page whose payload could not be read (a broken overflow chain). SQL
   * may still return these rows, with the damaged page's bytes as their content.
   */
  broken: PerTable<Set<number>>;
  /** Rowids seen twice with different values; neither copy is trusted. */
  conflicts: PerTable<Set<number>>;
  /** Rowids in committed WAL frames past a damaged frame: rows that existed but cannot be applied. */
  stranded: PerTable<Set<number>>;
  meta: Map<string, string>;
  damagedCells: number;
}

/** Cells that parse and do not overlap one another; the rest are damage. */
function goodCells(page: Buffer, offsets: number[], usable: number): { cells: TableLeafCell[]; bad: number } {
  const parsed = offsets.map((at) => ({ at, cell: readTableLeafCell(page, at, usable) }));
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
  const cells: TableLeafCell[] = [];
  for (const { at, cell } of parsed) if (cell !== null && !overlapping.has(at)) cells.push(cell);
  return { cells, bad: offsets.length - cells.length };
}

/** Pages an overflow chain must not enter: free pages and b-tree pages. */
interface NotOverflow {
  free: Set<number>;
  btree: Set<number>;
}

/**
 * Follow an overflow chain; returns the whole payload and the pages used, or null if it breaks.
 * A real overflow page never parses as a b-tree page (its first bytes are a small page number),
 * so a chain that runs into one is damaged.
 */
function readPayload(
  image: PageImage,
  cell: TableLeafCell,
  not: NotOverflow,
): { payload: Uint8Array; pages: number[] } | null {
  if (cell.overflow === 0) return { payload: cell.local, pages: [] };
  const payload = Buffer.alloc(cell.payloadSize);
  Buffer.from(cell.local).copy(payload, 0);
  let filled = cell.local.length;
  const pages: number[] = [];
  const seen = new Set<number>();
  let at = cell.overflow;
  const perPage = image.usable - 4;
  while (filled < cell.payloadSize) {
    if (at < 2 || at > image.pageCount || not.free.has(at) || not.btree.has(at) || seen.has(at)) return null;
    seen.add(at);
    const page = image.page(at);
    if (page === null) return null;
    const take = Math.min(perPage, cell.payloadSize - filled);
    const next = page.readUInt32BE(0);
    // A zeroed page reads as a chain's valid end; text is never a page of NUL bytes.
    if (next === 0 && isZero(page, 4, 4 + take)) return null;
    page.copy(payload, filled, 4, 4 + take);
    filled += take;
    pages.push(at);
    at = next;
  }
  // SQLite ends every chain with 0; the last page's pointer is the one thing it never reads back.
  return at === 0 ? { payload, pages } : null;
}

function isZero(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] !== 0) return false;
  return true;
}

export function salvagePages(image: PageImage): PageSalvage {
  const freelist = readFreelist(image);
  const free = freelist.pages;
  const wal = image.wal;
  const result: PageSalvage = {
    pageSize: image.pageSize,
    pageSizeFrom: image.pageSizeSource,
    headerProblem: image.header.valid ? null : image.header.problem,
    pageCount: image.pageCount,
    wal: {
      present: wal.present,
      header_valid: wal.headerValid,
      frames: wal.frames,
      applied: wal.applied.length,
      stranded: wal.stranded.length,
      problem: wal.problem,
    },
    unreadable: [],
    missing: image.missingCount(),
    freelist,
    rows: perTable(() => new Map()),
    broken: perTable(() => new Set()),
    conflicts: perTable(() => new Set()),
    stranded: perTable(() => new Set()),
    meta: new Map(),
    damagedCells: 0,
  };
  const btree = new Set<number>();
  const leaves: number[] = [];
  // Pages past the last one present are counted as missing, not walked (a damaged header may claim
  // billions of them).
  const last = image.lastPresent;
  const absent = new Set<number>();
  for (let pgno = 1; pgno <= last; pgno++) {
    if (free.has(pgno)) continue;
    const page = image.page(pgno);
    if (page === null) absent.add(pgno);
    const parsed = page === null ? null : parseBtreePage(page, pgno, image.usable);
    if (parsed === null) continue;
    btree.add(pgno);
    if (parsed.kind === "table-leaf") leaves.push(pgno);
  }
  const overflowPages = new Set<number>();
  for (const pgno of leaves) {
    const page = image.page(pgno);
    const parsed = page === null ? null : parseBtreePage(page, pgno, image.usable);
    if (page === null || parsed === null) continue;
    const { cells, bad } = goodCells(page, parsed.cells, image.usable);
    result.damagedCells += bad;
    for (const cell of cells) takeCell(image, cell, { free, btree }, result, overflowPages);
  }
  for (let pgno = 1; pgno <= last; pgno++) {
    if (!absent.has(pgno) && !free.has(pgno) && !btree.has(pgno) && !overflowPages.has(pgno))
      result.unreadable.push(pgno);
  }
  collectStranded(image, result);
  return result;
}

function takeCell(
  image: PageImage,
  cell: TableLeafCell,
  not: NotOverflow,
  result: PageSalvage,
  overflowPages: Set<number>,
): void {
  const header = readRecordHeader(cell.local, cell.payloadSize);
  const full = readPayload(image, cell, not);
  for (const p of full?.pages ?? []) overflowPages.add(p);
  if (header === null) {
    result.damagedCells++;
    return;
  }
  const table = classifyShape(header.kinds);
  if (table === null) return; // a row of another table (the schema, the search queue)
  if (cell.rowid > BigInt(Number.MAX_SAFE_INTEGER) || cell.rowid < BigInt(Number.MIN_SAFE_INTEGER)) {
    result.damagedCells++;
    return;
  }
  const rowid = Number(cell.rowid);
  if (table === "meta") {
    if (full === null) return;
    const [key, value] = readRecordValues(full.payload, header, image.encoding);
    if (typeof key === "string" && typeof value === "string") result.meta.set(key, value);
    return;
  }
  if (full === null) {
    result.broken[table].add(rowid);
    return;
  }
  const values = readRecordValues(full.payload, header, image.encoding);
  if (table === "messages") values[0] = rowid;
  const existing = result.rows[table].get(rowid);
  if (existing !== undefined && !sameValues(existing.values, values)) result.conflicts[table].add(rowid);
  result.rows[table].set(rowid, { rowid, values });
}

function sameValues(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((v, i) => {
    const w = b[i];
    if (Buffer.isBuffer(v) && Buffer.isBuffer(w)) return v.equals(w);
    return v === w;
  });
}

/** Rowids on table leaves of the stranded WAL frames (latest image of each page), by shape only. */
function collectStranded(image: PageImage, result: PageSalvage): void {
  const latest = new Map<number, number>();
  for (const frame of image.wal.stranded) latest.set(frame.pgno, frame.offset);
  for (const [pgno, offset] of latest) {
    const page = image.walFramePage(offset);
    const parsed = page === null ? null : parseBtreePage(page, pgno, image.usable);
    if (page === null || parsed === null || parsed.kind !== "table-leaf") continue;
    for (const cell of goodCells(page, parsed.cells, image.usable).cells) {
      const header: RecordHeader | null = readRecordHeader(cell.local, cell.payloadSize);
      const table = header === null ? null : classifyShape(header.kinds);
      if (table === null || table === "meta" || cell.rowid > BigInt(Number.MAX_SAFE_INTEGER)) continue;
      result.stranded[table].add(Number(cell.rowid));
    }
  }
}
