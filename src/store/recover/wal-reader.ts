// Reading a WAL file by hand, the way SQLite recovers it when there is no wal-index: the header,
// then frames while their salts match the header and their running checksum adds up, keeping only
// those up to the last commit frame. Frames past a break are never applied, but the ones that still
// verify on their own are reported, so rows that were committed there are counted as lost.
import { closeSync, fstatSync, openSync, readSync } from "node:fs";

export interface WalFrame {
  /** 0-based position in the file. */
  index: number;
  pgno: number;
  /** Database size in pages after this commit; 0 for a frame that is not a commit. */
  commitSize: number;
  /** Where the page image starts in the WAL file. */
  offset: number;
}

export interface WalScan {
  present: boolean;
  headerValid: boolean;
  problem: string | null;
  pageSize: number;
  /** Whole frames the file holds. */
  frames: number;
  /** The committed, checksummed prefix: what SQLite itself would read. */
  applied: WalFrame[];
  /** Database size in pages after the last applied commit (0 when none). */
  commitSize: number;
  /** Frames of this WAL generation past a damaged frame that verify on their own, up to their last commit. */
  stranded: WalFrame[];
  /** The first damaged frame, when committed frames of this generation follow it. */
  brokenAt: number | null;
}

const HEADER = 32;
const FRAME_HEADER = 24;
const MAGIC_LE = 0x377f0682;
const MAGIC_BE = 0x377f0683;
const VERSION = 3007000;

type Sums = [number, number];

/** SQLite's WAL checksum: two running 32-bit sums over pairs of words, in the byte order the magic says. */
function checksum(buf: Buffer, start: number, end: number, bigEndian: boolean, seed: Sums): Sums {
  let s0 = seed[0];
  let s1 = seed[1];
  for (let i = start; i + 8 <= end; i += 8) {
    const x0 = bigEndian ? buf.readUInt32BE(i) : buf.readUInt32LE(i);
    const x1 = bigEndian ? buf.readUInt32BE(i + 4) : buf.readUInt32LE(i + 4);
    s0 = (s0 + x0 + s1) >>> 0;
    s1 = (s1 + x1 + s0) >>> 0;
  }
  return [s0, s1];
}

function emptyScan(present: boolean, problem: string | null): WalScan {
  return {
    present,
    headerValid: false,
    problem,
    pageSize: 0,
    frames: 0,
    applied: [],
    commitSize: 0,
    stranded: [],
    brokenAt: null,
  };
}

export function isValidPageSize(size: number): boolean {
  return size >= 512 && size <= 65536 && (size & (size - 1)) === 0;
}

/** Scan the WAL at `path` (null: there is none). `dbPageSize` is the main file's, when known. */
export function scanWal(path: string | null, dbPageSize: number | null): WalScan {
  if (path === null) return emptyScan(false, null);
  const fd = openSync(path, "r");
  try {
    return scanOpenWal(fd, fstatSync(fd).size, dbPageSize);
  } finally {
    closeSync(fd);
  }
}

function scanOpenWal(fd: number, size: number, dbPageSize: number | null): WalScan {
  if (size === 0) return emptyScan(true, null);
  if (size < HEADER) return emptyScan(true, `the WAL is ${size} bytes, shorter than its header`);
  const header = Buffer.alloc(HEADER);
  readSync(fd, header, 0, HEADER, 0);
  const magic = header.readUInt32BE(0);
  const pageSize = header.readUInt32BE(8);
  if (magic !== MAGIC_LE && magic !== MAGIC_BE)
    return emptyScan(true, "the WAL header is damaged (bad magic)");
  const bigEndian = magic === MAGIC_BE;
  const sums = checksum(header, 0, 24, bigEndian, [0, 0]);
  if (sums[0] !== header.readUInt32BE(24) || sums[1] !== header.readUInt32BE(28)) {
    return emptyScan(true, "the WAL header is damaged (checksum mismatch)");
  }
  if (header.readUInt32BE(4) !== VERSION || !isValidPageSize(pageSize)) {
    return emptyScan(true, "the WAL header names an unknown version or page size");
  }
  if (dbPageSize !== null && dbPageSize !== pageSize) {
    return emptyScan(true, `the WAL's page size ${pageSize} differs from the database's ${dbPageSize}`);
  }
  const salt1 = header.readUInt32BE(16);
  const salt2 = header.readUInt32BE(20);
  const frameSize = FRAME_HEADER + pageSize;
  const frames = Math.floor((size - HEADER) / frameSize);
  const buf = Buffer.alloc(frameSize);
  const read = (index: number) => {
    readSync(fd, buf, 0, frameSize, HEADER + index * frameSize);
    return {
      pgno: buf.readUInt32BE(0),
      commitSize: buf.readUInt32BE(4),
      saltsMatch: buf.readUInt32BE(8) === salt1 && buf.readUInt32BE(12) === salt2,
      stored: [buf.readUInt32BE(16), buf.readUInt32BE(20)] as Sums,
    };
  };
  const verify = (seed: Sums, stored: Sums) => {
    const s = checksum(buf, FRAME_HEADER, frameSize, bigEndian, checksum(buf, 0, 8, bigEndian, seed));
    return s[0] === stored[0] && s[1] === stored[1] ? s : null;
  };
  const frameAt = (index: number, pgno: number, commitSize: number): WalFrame => ({
    index,
    pgno,
    commitSize,
    offset: HEADER + index * frameSize + FRAME_HEADER,
  });

  // The valid prefix, exactly as SQLite rebuilds its wal-index.
  const valid: WalFrame[] = [];
  let seed = sums;
  let lastCommit = -1;
  let firstBad = frames;
  for (let i = 0; i < frames; i++) {
    const f = read(i);
    const next = f.pgno > 0 && f.saltsMatch ? verify(seed, f.stored) : null;
    if (next === null) {
      firstBad = i;
      break;
    }
    seed = next;
    valid.push(frameAt(i, f.pgno, f.commitSize));
    if (f.commitSize > 0) lastCommit = i;
  }
  const applied = valid.slice(0, lastCommit + 1);
  const commitSize = applied[applied.length - 1]?.commitSize ?? 0;

  // Past a break: frames of this generation that verify against their predecessor's stored sums.
  const after: WalFrame[] = valid.slice(lastCommit + 1);
  let previous: Sums | null = null;
  let lastStrandedCommit = -1;
  for (let i = firstBad; i < frames; i++) {
    const f = read(i);
    const ok = previous !== null && f.pgno > 0 && f.saltsMatch && verify(previous, f.stored) !== null;
    previous = f.stored;
    if (!ok) continue;
    after.push(frameAt(i, f.pgno, f.commitSize));
    if (f.commitSize > 0) lastStrandedCommit = i;
  }
  const stranded = after.filter((f) => f.index <= lastStrandedCommit);
  return {
    present: true,
    headerValid: true,
    problem: stranded.length > 0 ? `the WAL is damaged at frame ${firstBad + 1} of ${frames}` : null,
    pageSize,
    frames,
    applied,
    commitSize,
    stranded,
    brokenAt: stranded.length > 0 ? firstBad : null,
  };
}
