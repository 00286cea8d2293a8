// The database as SQLite would see it, page by page: the main file with the WAL's committed frames
// laid over it. Works from the forensic copies only. When page 1 is damaged, the page size comes
// from the WAL header or, failing that, from the size at which most pages parse as b-tree pages.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { parseBtreePage } from "./btree-page.js";
import type { TextEncoding } from "./record.js";
import { isValidPageSize, scanWal, type WalScan } from "./wal-reader.js";

export interface DbHeader {
  valid: boolean;
  problem: string | null;
  pageSize: number;
  reserved: number;
  /** Size in pages the header claims, when that field is trustworthy (else 0). */
  pageCount: number;
  freelistTrunk: number;
  freelistCount: number;
  encoding: TextEncoding;
}

const MAGIC = "SQLite format 3\0";

export function parseDbHeader(buf: Buffer): DbHeader {
  const bad = (problem: string): DbHeader => ({
    valid: false,
    problem,
    pageSize: 0,
    reserved: 0,
    pageCount: 0,
    freelistTrunk: 0,
    freelistCount: 0,
    encoding: "utf8",
  });
  if (buf.length < 100) return bad("the file is shorter than its 100-byte header");
  if (buf.subarray(0, 16).toString("latin1") !== MAGIC)
    return bad("page 1 does not start with the SQLite header");
  const raw = buf.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  const reserved = buf[20] ?? 0;
  const encodingCode = buf.readUInt32BE(56);
  if (!isValidPageSize(pageSize) || reserved > pageSize - 480)
    return bad("the header's page size is invalid");
  if (buf[21] !== 64 || buf[22] !== 32 || buf[23] !== 32)
    return bad("the header's payload fractions are invalid");
  if (encodingCode < 1 || encodingCode > 3) return bad("the header's text encoding is invalid");
  const sizeValid = buf.readUInt32BE(24) === buf.readUInt32BE(92);
  return {
    valid: true,
    problem: null,
    pageSize,
    reserved,
    pageCount: sizeValid ? buf.readUInt32BE(28) : 0,
    freelistTrunk: buf.readUInt32BE(32),
    freelistCount: buf.readUInt32BE(36),
    encoding: encodingCode === 1 ? "utf8" : encodingCode === 2 ? "utf16le" : "utf16be",
  };
}

export class PageImage {
  private readonly walPages = new Map<number, number>();
  readonly header: DbHeader;
  readonly wal: WalScan;
  readonly pageSize: number;
  readonly usable: number;
  readonly pageCount: number;
  readonly pageSizeSource: "header" | "wal" | "guess";

  private constructor(
    private readonly fd: number,
    private readonly walFd: number | null,
    readonly fileSize: number,
    walPath: string | null,
  ) {
    const main = parseDbHeader(this.readAt(fd, 0, 100));
    let wal = scanWal(walPath, main.valid ? main.pageSize : null);
    if (!wal.headerValid && main.valid && wal.problem?.includes("page size")) wal = scanWal(walPath, null);
    this.wal = wal;
    for (const frame of wal.applied) this.walPages.set(frame.pgno, frame.offset);
    let pageSize = main.valid ? main.pageSize : wal.headerValid ? wal.pageSize : 0;
    this.pageSizeSource = main.valid ? "header" : wal.headerValid ? "wal" : "guess";
    if (pageSize === 0) pageSize = this.guessPageSize();
    this.pageSize = pageSize;
    // A newer page 1 in the WAL carries the header SQLite would use.
    const walFirst = this.walPages.get(1);
    const header =
      walFirst !== undefined && walFd !== null ? parseDbHeader(this.readAt(walFd, walFirst, 100)) : main;
    this.header = header.valid ? header : main;
    this.usable = pageSize - (this.header.valid ? this.header.reserved : 0);
    const fromFile = Math.ceil(fileSize / pageSize);
    this.pageCount =
      wal.commitSize > 0 ? wal.commitSize : this.header.pageCount > 0 ? this.header.pageCount : fromFile;
  }

  /** Open the image of `dbPath` with `walPath` (null: no WAL) laid over it. */
  static open(dbPath: string, walPath: string | null): PageImage {
    const fd = openSync(dbPath, "r");
    let walFd: number | null = null;
    try {
      walFd = walPath === null ? null : openSync(walPath, "r");
      return new PageImage(fd, walFd, fstatSync(fd).size, walPath);
    } catch (error) {
      closeSync(fd);
      if (walFd !== null) closeSync(walFd);
      throw error;
    }
  }

  get encoding(): TextEncoding {
    return this.header.valid ? this.header.encoding : "utf8";
  }

  /** Page `pgno` (1-based) as SQLite would read it, or null when the file does not hold it. */
  page(pgno: number): Buffer | null {
    if (!Number.isInteger(pgno) || pgno < 1 || pgno > this.pageCount) return null;
    const walOffset = this.walPages.get(pgno);
    if (walOffset !== undefined && this.walFd !== null)
      return this.readAt(this.walFd, walOffset, this.pageSize);
    const offset = (pgno - 1) * this.pageSize;
    if (offset + this.pageSize > this.fileSize) return null;
    return this.readAt(this.fd, offset, this.pageSize);
  }

  /**
   * Where in the WAL the image's copy of `pgno` comes from (later frames lie further on), or null
   * when it is the main file's: the order in which two copies of a row were written.
   */
  walOffsetOf(pgno: number): number | null {
    return this.walFd === null ? null : (this.walPages.get(pgno) ?? null);
  }

  /** A page image as a WAL frame holds it (for frames that are not applied). */
  walFramePage(offset: number): Buffer | null {
    if (this.walFd === null) return null;
    const buf = this.readAt(this.walFd, offset, this.pageSize);
    return buf.length === this.pageSize ? buf : null;
  }

  /** The highest page the image holds bytes for; past it every page is missing. */
  get lastPresent(): number {
    let last = Math.floor(this.fileSize / this.pageSize);
    for (const pgno of this.walPages.keys()) if (pgno > last) last = pgno;
    return Math.min(last, this.pageCount);
  }

  /** How many pages the image lacks: past the end of a truncated file and not in the WAL. */
  missingCount(): number {
    const whole = Math.floor(this.fileSize / this.pageSize);
    if (this.pageCount <= whole) return 0;
    let inWal = 0;
    for (const pgno of this.walPages.keys()) if (pgno > whole && pgno <= this.pageCount) inWal++;
    return this.pageCount - whole - inWal;
  }

  close(): void {
    closeSync(this.fd);
    if (this.walFd !== null) closeSync(this.walFd);
  }

  private readAt(fd: number, position: number, length: number): Buffer {
    const buf = Buffer.alloc(length);
    const n = readSync(fd, buf, 0, length, position);
    return n === length ? buf : buf.subarray(0, n);
  }

  /** With no trustworthy header: the page size at which the most pages parse as b-tree pages. */
  private guessPageSize(): number {
    let best = 4096;
    let bestCount = 0;
    for (let size = 512; size <= 65536; size *= 2) {
      const pages = Math.min(Math.floor(this.fileSize / size), 4096);
      let count = 0;
      for (let p = 2; p <= pages; p++) {
        const buf = this.readAt(this.fd, (p - 1) * size, size);
        if (buf.length === size && parseBtreePage(buf, p, size) !== null) count++;
      }
      if (count > bestCount) {
        best = size;
        bestCount = count;
      }
    }
    return best;
  }
}
