// The spool: when the store cannot take a write (corrupt file, full disk), the write is appended
// here as one JSON line and flushed to disk before the caller hears about it, so nothing
// acknowledged is lost. Recovery replays these lines into a repaired store.
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { newId } from "../core/ids.js";
import type { WriteOp } from "./ops.js";

export interface SpoolRecord {
  v: 1;
  spooled_at: number;
  profile: string;
  store: string;
  reason: string;
  ops: WriteOp[];
}

export class Spool {
  private fd: number | null = null;
  private file: string | null = null;

  constructor(
    readonly dir: string,
    private readonly profile: string,
    private readonly store: string,
  ) {}

  /** Append one record and fsync it; returns the file it went to. Throws if even that fails. */
  append(ops: WriteOp[], reason: string, now: number): string {
    const record: SpoolRecord = {
      v: 1,
      spooled_at: now,
      profile: this.profile,
      store: this.store,
      reason,
      ops,
    };
    const { fd, file } = this.open(now);
    const before = fstatSync(fd).size;
    try {
      writeSync(fd, `${JSON.stringify(record)}\n`);
      fsyncSync(fd);
    } catch (error) {
      // Never leave half a line behind: the next record would be glued to it and lost with it.
      try {
        ftruncateSync(fd, before);
      } catch {
        // readSpool still reports a torn line as skipped, with its file and line.
      }
      throw error;
    }
    return file;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }

  private open(now: number): { fd: number; file: string } {
    if (this.fd !== null && this.file !== null) return { fd: this.fd, file: this.file };
    const created = !existsSync(this.dir);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const stamp = new Date(now).toISOString().replace(/[-:]/g, "").slice(0, 15);
    this.file = join(this.dir, `${stamp}-${process.pid}-${newId("", now).slice(-6)}.jsonl`);
    this.fd = openSync(this.file, "a", 0o600);
    syncDir(this.dir);
    if (created) syncDir(join(this.dir, ".."));
    return { fd: this.fd, file: this.file };
  }
}

function syncDir(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface SpoolReadResult {
  files: string[];
  records: SpoolRecord[];
  /** Lines that could not be parsed (a torn last line after a crash), with where they are. */
  skipped: { file: string; line: number; reason: string }[];
}

/** Read every spool file in a folder, oldest first. A missing folder is an empty spool. */
export function readSpool(dir: string): SpoolReadResult {
  const result: SpoolReadResult = { files: [], records: [], skipped: [] };
  if (!existsSync(dir)) return result;
  const files = readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .sort();
  for (const name of files) {
    const file = join(dir, name);
    result.files.push(file);
    const lines = readFileSync(file, "utf8").split("\n");
    lines.forEach((line, index) => {
      if (line.trim() === "") return;
      try {
        const record = JSON.parse(line) as SpoolRecord;
        if (record.v !== 1 || !Array.isArray(record.ops)) throw new Error("not a spool record");
        result.records.push(record);
      } catch (error) {
        result.skipped.push({ file, line: index + 1, reason: (error as Error).message });
      }
    });
  }
  return result;
}
