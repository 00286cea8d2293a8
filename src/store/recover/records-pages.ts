// Page-level salvage of `records`, a WITHOUT ROWID table: its rows are the entries of an index
// b-tree, on interior pages as well as leaves. An entry is told apart from other indexes' by its
// shape; every intact copy is kept with the order it was written in (main file, then WAL frames),
// for the merge to keep the newest.
import { type BtreePage, goodCells, readIndexCell } from "./btree-page.js";
import { type NotOverflow, readPayload } from "./overflow-chain.js";
import type { PageImage } from "./page-image.js";
import { readLeadingValues, readRecordHeader, readRecordValues } from "./record.js";
import { isRecordShape, type RecordKey, recordId, type SalvagedRecord, toRecord } from "./row-shapes.js";

export interface RecordCopy {
  record: SalvagedRecord;
  /** When the page was written: -1 for the main file, else the offset of its WAL frame (later is newer). */
  order: number;
  pgno: number;
}

export interface RecordsPages {
  /** Every intact copy of each record seen on a page, by record id. */
  copies: Map<string, RecordCopy[]>;
  /** Records whose overflow chain is broken: their key is known, their value is not. */
  broken: Map<string, RecordKey>;
  /** Records on index pages of committed WAL frames past a damaged frame (not applied). */
  stranded: Map<string, RecordKey>;
  /** Cells of index pages that could not be read at all (of records or of another index). */
  damagedCells: number;
}

export function emptyRecordsPages(): RecordsPages {
  return { copies: new Map(), broken: new Map(), stranded: new Map(), damagedCells: 0 };
}

function cellsOf(page: Buffer, parsed: BtreePage, usable: number) {
  const interior = parsed.kind === "index-interior";
  return goodCells(parsed.cells, (at) => readIndexCell(page, at, usable, interior));
}

/** Take the records on one index page of the image. */
export function takeIndexPage(
  image: PageImage,
  pgno: number,
  page: Buffer,
  parsed: BtreePage,
  not: NotOverflow,
  result: RecordsPages,
  overflowPages: Set<number>,
): void {
  const { cells, bad } = cellsOf(page, parsed, image.usable);
  result.damagedCells += bad;
  const order = image.walOffsetOf(pgno) ?? -1;
  for (const cell of cells) {
    const header = readRecordHeader(cell.local, cell.payloadSize);
    const full = readPayload(image, cell, not);
    for (const p of full?.pages ?? []) overflowPages.add(p);
    if (header === null) {
      result.damagedCells++;
      continue;
    }
    if (!isRecordShape(header.kinds)) continue;
    if (full === null) {
      // The key leads the row, so it is almost always on the page itself.
      const key = keyOf(readLeadingValues(cell.local, header, image.encoding, 2));
      if (key === null) result.damagedCells++;
      else result.broken.set(recordId(key.kind, key.key), key);
      continue;
    }
    const record = toRecord(readRecordValues(full.payload, header, image.encoding));
    if (record === null) {
      result.damagedCells++;
      continue;
    }
    const copies = result.copies.get(record.id);
    if (copies === undefined) result.copies.set(record.id, [{ record, order, pgno }]);
    else copies.push({ record, order, pgno });
  }
}

/** The keys of the records on an index page of a stranded WAL frame (by shape only). */
export function takeStrandedIndexPage(
  image: PageImage,
  page: Buffer,
  parsed: BtreePage,
  result: RecordsPages,
): void {
  for (const cell of cellsOf(page, parsed, image.usable).cells) {
    const header = readRecordHeader(cell.local, cell.payloadSize);
    if (header === null || !isRecordShape(header.kinds)) continue;
    const key = keyOf(readLeadingValues(cell.local, header, image.encoding, 2));
    if (key !== null) result.stranded.set(recordId(key.kind, key.key), key);
  }
}

function keyOf(values: readonly unknown[] | null): RecordKey | null {
  const [kind, key] = values ?? [];
  return typeof kind === "string" && typeof key === "string" ? { kind, key } : null;
}
