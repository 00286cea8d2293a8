// A log file that never fills the disk: one JSON line per entry, appended; when the file would
// pass its size limit it becomes NAME.1 (NAME.1 becomes NAME.2, and so on) and a new file starts,
// keeping at most `keep` old files. So the logs take at most (keep + 1) × max_bytes.
import { closeSync, fstatSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { Redactor } from "./redact.js";
import { shiftRotated } from "./rotate-files.js";

export interface LogFileOptions {
  maxBytes: number;
  keep: number;
  now?: () => number;
  /** The profile's secrets, redacted from every line (with anything shaped like a key). */
  redactor?: Redactor;
}

export type LogLevel = "info" | "warn" | "error";

export class RotatingLog {
  private fd: number | null = null;
  private size = 0;
  /** Set when the log cannot be written; the process goes on, and says so once. */
  failed: string | null = null;
  private readonly now: () => number;

  constructor(
    readonly file: string,
    private readonly options: LogFileOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  write(level: LogLevel, message: string, data?: Record<string, unknown>): void {
    const json = JSON.stringify({
      at: new Date(this.now()).toISOString(),
      level,
      message,
      ...(data ? { data } : {}),
    });
    const line = `${this.options.redactor?.redactMessage(json) ?? json}\n`;
    try {
      this.open();
      const bytes = Buffer.byteLength(line);
      if (this.size > 0 && this.size + bytes > this.options.maxBytes) this.rotate();
      this.size += writeSync(this.fd as number, line);
    } catch (error) {
      // A full or read-only disk must not stop the gateway; /health's disk component shows why.
      this.failed = error instanceof Error ? error.message : String(error);
      this.closeFd();
    }
  }

  close(): void {
    this.closeFd();
  }

  private open(): void {
    if (this.fd !== null) return;
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    this.fd = openSync(this.file, "a", 0o600);
    this.size = fstatSync(this.fd).size;
  }

  private rotate(): void {
    this.closeFd();
    shiftRotated(this.file, this.options.keep);
    this.open();
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
