// A JSON-lines file that several processes append to at once (the profile's logs/events.jsonl:
// the gateway, `tenax chat`, `tenax cron tick` may all write it at the same moment), rotated at a
// size like the gateway's log. The rules that keep every line whole and every line kept:
//
// - A line is one write(2) on a descriptor opened with O_APPEND. The kernel moves to the end and
//   writes under the file's lock in one step, so lines of different processes never interleave,
//   whatever their size (a regular file, not a pipe: PIPE_BUF does not apply).
// - The file is opened for each line, never held open: once another process has rotated it, the
//   next line goes to the new file. A line being written during a rename lands, whole, at the end
//   of NAME.1; a reader that merges the files by time loses nothing.
// - One process rotates at a time: the one that creates NAME.lock (O_EXCL) re-reads the size of
//   NAME under the lock (another may have rotated it just before) and, still over the limit,
//   renames NAME.(keep-1) → NAME.keep … NAME → NAME.1, then removes the lock. The others append on
//   to NAME meanwhile (a few lines past the limit). A lock older than LOCK_STALE_MS belongs to a
//   process that died mid-rotation and is taken over.
// - Writing never throws: a full disk or a read-only folder sets `failed`, tells `onFailure` once
//   (until a line is written again), and the work that reported the event goes on.
import { closeSync, fstatSync, mkdirSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { Redactor } from "./redact.js";
import { shiftRotated } from "./rotate-files.js";

export interface AppendLogOptions {
  /** Rotate once the file would pass this size. */
  maxBytes: number;
  /** Old files kept (NAME.1 … NAME.keep); 0 keeps none. */
  keep: number;
  /** The profile's secrets, redacted from every line (with anything shaped like a key). */
  redactor?: Redactor;
  /** Told once when the file cannot be written (and again after a line was written since). */
  onFailure?: (message: string) => void;
  now?: () => number;
}

/** A rotation lock held this long is a dead process's. */
export const LOCK_STALE_MS = 30_000;

export class AppendLog {
  /** Why the last line could not be written; null once one is. */
  failed: string | null = null;
  private readonly now: () => number;

  constructor(
    readonly file: string,
    private readonly options: AppendLogOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Append `record` as one JSON line; true when it was written whole. */
  append(record: object): boolean {
    const json = JSON.stringify(record);
    const line = Buffer.from(`${this.options.redactor?.redactMessage(json) ?? json}\n`);
    try {
      let fd = this.open();
      try {
        if (this.overLimit(fstatSync(fd).size, line.length)) {
          closeSync(fd);
          fd = -1;
          this.rotate(line.length);
          fd = this.open();
        }
        const written = writeSync(fd, line);
        if (written !== line.length) throw new Error(`only ${written} of ${line.length} bytes were written`);
      } finally {
        if (fd >= 0) closeSync(fd);
      }
      this.failed = null;
      return true;
    } catch (error) {
      const message = `${this.file}: ${error instanceof Error ? error.message : String(error)}`;
      if (this.failed === null) this.options.onFailure?.(message);
      this.failed = message;
      return false;
    }
  }

  private open(): number {
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    return openSync(this.file, "a", 0o600);
  }

  private overLimit(size: number, adding: number): boolean {
    return size > 0 && size + adding > this.options.maxBytes;
  }

  /** Rotate under the lock, or leave it to the process that holds it. */
  private rotate(adding: number): void {
    const lock = `${this.file}.lock`;
    if (!this.takeLock(lock)) return;
    try {
      // Another process may have rotated between our look and the lock.
      if (!this.overLimit(sizeOf(this.file), adding)) return;
      shiftRotated(this.file, this.options.keep);
    } finally {
      rmSync(lock, { force: true });
    }
  }

  private takeLock(lock: string): boolean {
    for (let tries = 0; tries < 2; tries++) {
      try {
        closeSync(openSync(lock, "wx", 0o600));
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        let age: number;
        try {
          age = this.now() - statSync(lock).mtimeMs;
        } catch {
          continue; // released meanwhile: try again
        }
        if (age < LOCK_STALE_MS) return false;
        rmSync(lock, { force: true });
      }
    }
    return false;
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}
