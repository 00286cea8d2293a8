// Reading the audit trail back (audit-trail.ts writes it): the rotated files and the current one
// merged in time order, and a tail that follows the current file across rotations. A line that is
// not a whole record (a process died mid-write, a disk filled) is skipped and counted, never fatal.
import { closeSync, fstatSync, openSync, readdirSync, readFileSync, readSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { AuditRecord } from "./audit-trail.js";

export interface ReadTrail {
  records: AuditRecord[];
  /** Lines that were not a record. */
  damaged: number;
  /** The files read, oldest first. */
  files: string[];
}

/** NAME.keep … NAME.1, then NAME: the files of a trail that exist, oldest first. */
export function trailFiles(file: string): string[] {
  const dir = dirname(file);
  const name = basename(file);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const rotated = names
    .map((n) => ({ n, index: n.startsWith(`${name}.`) ? Number(n.slice(name.length + 1)) : Number.NaN }))
    .filter((f) => Number.isInteger(f.index) && f.index > 0)
    .sort((a, b) => b.index - a.index)
    .map((f) => join(dir, f.n));
  return [...rotated, ...(names.includes(name) ? [file] : [])];
}

/**
 * Every record of the trail, oldest first. `rotatedOnly` leaves the current file out, and any
 * file that is `skipIno` (a TrailTail reads them, so nothing is read twice or missed).
 */
export function readTrail(
  file: string,
  options: { rotatedOnly?: boolean; skipIno?: number } = {},
): ReadTrail {
  const files = trailFiles(file).filter((f) => !(options.rotatedOnly && f === file));
  const records: AuditRecord[] = [];
  let damaged = 0;
  for (const f of files) {
    let text: string;
    try {
      if (options.skipIno !== undefined && statSync(f).ino === options.skipIno) continue;
      text = readFileSync(f, "utf8");
    } catch {
      continue; // rotated away between the listing and the read: its lines are in the next file
    }
    const parsed = parseLines(text);
    records.push(...parsed.records);
    damaged += parsed.damaged;
  }
  // Lines are appended in time order per file; a line written during a rotation may end NAME.1
  // after the first lines of NAME, and processes' clocks are read a moment before they append.
  const sorted = records
    .map((record, i) => ({ record, i, t: Date.parse(record.time) }))
    .sort((a, b) => a.t - b.t || a.i - b.i)
    .map((x) => x.record);
  return { records: sorted, damaged, files };
}

/** The records of some JSON lines; `damaged` counts the lines that are not one. */
export function parseLines(text: string): { records: AuditRecord[]; damaged: number } {
  const records: AuditRecord[] = [];
  let damaged = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const record = parseRecord(line);
    if (record) records.push(record);
    else damaged++;
  }
  return { records, damaged };
}

function parseRecord(line: string): AuditRecord | null {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return null;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const r = value as Record<string, unknown>;
  if (typeof r.time !== "string" || Number.isNaN(Date.parse(r.time))) return null;
  if (typeof r.type !== "string" || typeof r.layer !== "string") return null;
  return value as AuditRecord;
}

/**
 * Follows the current file from its start: `poll()` returns the whole lines appended since the
 * last poll. When the file was rotated (another inode at the name), what the old file got after
 * the last poll is read to its end first, then the new file from its start.
 */
export class TrailTail {
  private fd: number | null = null;
  /** The inode of the file it reads; -1 before there is one. */
  ino = -1;
  private offset = 0;
  private partial = "";
  damaged = 0;

  constructor(private readonly file: string) {
    try {
      this.fd = openSync(file, "r");
      this.ino = fstatSync(this.fd).ino;
    } catch {
      this.fd = null; // none yet: the first poll that finds one reads it
    }
  }

  poll(): AuditRecord[] {
    const out: AuditRecord[] = [];
    const now = statOf(this.file);
    if (this.fd !== null) {
      out.push(...this.drain());
      if (now === null || now.ino !== this.ino) {
        // What is left of the old file is not a line and never will be: it was cut off.
        if (this.partial.trim() !== "") this.damaged++;
        this.partial = "";
        this.closeFd();
      } else if (now.size < this.offset) this.offset = 0; // truncated by hand: start again
    }
    if (this.fd === null && now !== null) {
      try {
        this.fd = openSync(this.file, "r");
        this.ino = fstatSync(this.fd).ino;
        this.offset = 0;
        this.partial = "";
        out.push(...this.drain());
      } catch {
        this.fd = null; // rotated between the look and the open: the next poll finds the new one
      }
    }
    return out;
  }

  close(): void {
    this.closeFd();
  }

  private drain(): AuditRecord[] {
    if (this.fd === null) return [];
    const chunks: Buffer[] = [];
    const buffer = Buffer.alloc(64 * 1024);
    for (;;) {
      const n = readSync(this.fd, buffer, 0, buffer.length, this.offset);
      if (n <= 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
      this.offset += n;
    }
    const text = this.partial + Buffer.concat(chunks).toString("utf8");
    const end = text.lastIndexOf("\n");
    this.partial = text.slice(end + 1);
    const parsed = parseLines(text.slice(0, end + 1));
    this.damaged += parsed.damaged;
    return parsed.records;
  }

  private closeFd(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // Already gone.
    }
    this.fd = null;
  }
}

function statOf(file: string): { ino: number; size: number } | null {
  try {
    const s = statSync(file);
    return { ino: s.ino, size: s.size };
  } catch {
    return null;
  }
}
