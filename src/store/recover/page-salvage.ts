// Page-level salvage: every table leaf page of the image that is not on the freelist, decoded cell
// by cell, each record assigned to a table by its shape. This reaches rows SQL cannot, such as the
// leaves under a garbage root or interior page. A cell whose overflow chain is broken loses only
// its own row, and is remembered as found. Index pages are read for the rows of `records`, which is
// a WITHOUT ROWID table (records-pages.ts).
import { goodCells, parseBtreePage, readTableLeafCell, type TableLeafCell } from "./btree-page.js";
import { type Freelist, readFreelist } from "./freelist.js";
import { type NotOverflow, readPayload } from "./overflow-chain.js";
import type { PageImage } from "./page-image.js";
import { type RecordHeader, readRecordHeader, readRecordValues } from "./record.js";
import {
  emptyRecordsPages,
  type RecordsPages,
  takeIndexPage,
  takeStrandedIndexPage,
} from "./records-pages.js";
import {
  classifyShape,
  type PerRowidTable,
  padValues,
  perRowidTable,
  type SalvagedRow,
} from "./row-shapes.js";

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
  rows: PerRowidTable<Map<number, SalvagedRow>>;
  /**
   * Rowids of cells seen on a page whose payload could not be read (a broken overflow chain). SQL
   * may still return these rows, with the damaged page's bytes as their content.
   */
  broken: PerRowidTable<Set<number>>;
  /** Rowids seen twice with different values; neither copy is trusted. */
  conflicts: PerRowidTable<Set<number>>;
  /** Rowids in committed WAL frames past a damaged frame: rows that existed but cannot be applied. */
  stranded: PerRowidTable<Set<number>>;
  /** The rows of `records`, from index pages. */
  records: RecordsPages;
  meta: Map<string, string>;
  /** Cells of table leaves that could not be read. */
  damagedCells: number;
}

const leafCells = (page: Buffer, offsets: number[], usable: number) =>
  goodCells<TableLeafCell>(offsets, (at) => readTableLeafCell(page, at, usable));

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
    rows: perRowidTable(() => new Map()),
    broken: perRowidTable(() => new Set()),
    conflicts: perRowidTable(() => new Set()),
    stranded: perRowidTable(() => new Set()),
    records: emptyRecordsPages(),
    meta: new Map(),
    damagedCells: 0,
  };
  const btree = new Set<number>();
  const leaves: number[] = [];
  const indexPages: number[] = [];
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
    else if (parsed.kind !== "table-interior") indexPages.push(pgno);
  }
  const overflowPages = new Set<number>();
  for (const pgno of leaves) {
    const page = image.page(pgno);
    const parsed = page === null ? null : parseBtreePage(page, pgno, image.usable);
    if (page === null || parsed === null) continue;
    const { cells, bad } = leafCells(page, parsed.cells, image.usable);
    result.damagedCells += bad;
    for (const cell of cells) takeCell(image, cell, { free, btree }, result, overflowPages);
  }
  for (const pgno of indexPages) {
    const page = image.page(pgno);
    const parsed = page === null ? null : parseBtreePage(page, pgno, image.usable);
    if (page === null || parsed === null) continue;
    takeIndexPage(image, pgno, page, parsed, { free, btree }, result.records, overflowPages);
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
  const values = padValues(table, readRecordValues(full.payload, header, image.encoding));
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

/**
 * Rowids on table leaves of the stranded WAL frames (latest image of each page), and the keys of
 * records on their index pages, by shape only.
 */
function collectStranded(image: PageImage, result: PageSalvage): void {
  const latest = new Map<number, number>();
  for (const frame of image.wal.stranded) latest.set(frame.pgno, frame.offset);
  for (const [pgno, offset] of latest) {
    const page = image.walFramePage(offset);
    const parsed = page === null ? null : parseBtreePage(page, pgno, image.usable);
    if (page === null || parsed === null || parsed.kind === "table-interior") continue;
    if (parsed.kind !== "table-leaf") {
      takeStrandedIndexPage(image, page, parsed, result.records);
      continue;
    }
    for (const cell of leafCells(page, parsed.cells, image.usable).cells) {
      const header: RecordHeader | null = readRecordHeader(cell.local, cell.payloadSize);
      const table = header === null ? null : classifyShape(header.kinds);
      if (table === null || table === "meta" || cell.rowid > BigInt(Number.MAX_SAFE_INTEGER)) continue;
      result.stranded[table].add(Number(cell.rowid));
    }
  }
}
