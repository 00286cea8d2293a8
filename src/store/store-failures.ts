// What the writing store says, and keeps, when it cannot write: a damaged file (the write goes to
// the spool), a failed sync (the same, from then on), a full disk, an I/O error. Each is a typed
// error that names the file and says what to do, and whether the write was stored.
import { dirname } from "node:path";
import type { Clock } from "../core/deps.js";
import { StoreCorruptError, StoreDiskFullError, StoreError } from "./errors.js";
import { recoverCommand } from "./open-database.js";
import type { WriteOp } from "./ops.js";
import type { Spool } from "./spool.js";
import type { StoreLocation } from "./store-reader.js";
import type { StoreEvent, StoreHealth } from "./store-types.js";

export class StoreFailures {
  /** Writes kept in the spool by this process. */
  spooledRecords = 0;

  constructor(
    private readonly location: StoreLocation,
    private readonly spool: Spool,
    private readonly spoolDir: string,
    private readonly clock: Clock,
    private readonly emit: (event: StoreEvent) => void,
  ) {}

  /** The store is damaged: keep the write in the spool (fsynced), and say where. */
  corrupt(ops: WriteOp[], detail: string): StoreCorruptError {
    const spooled = { to: null as string | null };
    const kept = this.keep(ops, "corrupt", spooled);
    const recover = recoverCommand(this.location.path, this.location.profile);
    return new StoreCorruptError(
      `the session store ${this.location.path} is damaged (${detail}).${kept}`,
      this.location.path,
      spooled.to,
      { hint: `stop Tenax for this profile, then see what can be salvaged: ${recover}` },
    );
  }

  /**
   * Syncing the WAL failed: the group's writes are committed but may not be on disk, so they are
   * refused as "may or may not be stored".
   */
  syncFailed(error: unknown): { error: StoreError; detail: string } {
    const code = (error as { code?: string }).code ?? "EIO";
    const detail = `syncing ${this.location.path}-wal failed (${code}: ${(error as Error).message})`;
    return {
      detail,
      error: new StoreError(
        "store_io",
        `the disk failed while syncing ${this.location.path} (${code}): the write was not acknowledged and may or may not be stored; this process takes no more writes (they are kept in the spool)`,
        {
          hint: `check the disk holding ${this.folder()} (dmesg, df -h), then restart Tenax; retrying is safe, messages are kept once by their uid`,
          data: { path: this.location.path, code },
          cause: error,
        },
      ),
    };
  }

  /** After a failed sync: keep the write in the spool and say so. */
  afterDiskFailure(ops: WriteOp[], failure: NonNullable<StoreHealth["disk_failure"]>): StoreError {
    const kept = this.keep(ops, "disk_failed");
    return new StoreError(
      "store_io",
      `the session store ${this.location.path} takes no more writes in this process since the disk failed a sync (${failure.detail}).${kept}`,
      {
        hint: `check the disk holding ${this.folder()} (dmesg, df -h), then restart Tenax; spooled writes are folded back by ${recoverCommand(this.location.path, this.location.profile)}`,
        data: { path: this.location.path },
      },
    );
  }

  /**
   * The disk failed a write or sync inside SQLite (EIO): not the file's fault, so not sticky. The
   * commit may or may not have reached the file (a failed fsync after the WAL write): say so.
   */
  diskFailed(error: unknown): StoreError {
    const code = (error as { code?: string }).code ?? "SQLITE_IOERR";
    return new StoreError(
      "store_io",
      `the disk failed while writing to ${this.location.path} (${code}: ${(error as Error).message}): the write was not acknowledged and may or may not be stored`,
      {
        hint: `check the disk holding ${this.folder()} (dmesg, df -h); retrying is safe, messages are kept once by their uid`,
        data: { path: this.location.path, sqlite_code: code },
        cause: error,
      },
    );
  }

  /** A full disk is not the file's fault: refuse the write plainly, and take the next one. */
  diskFull(): StoreDiskFullError {
    return new StoreDiskFullError(
      "store_disk_full",
      `the disk holding ${this.location.path} is full: the write was NOT stored (nothing earlier is affected)`,
      {
        hint: `free some space on that disk (df -h ${this.folder()}), then retry`,
        data: { path: this.location.path },
      },
    );
  }

  /** Append a refused write to the spool (fsynced); the sentence saying where it went, or that it did not. */
  private keep(ops: WriteOp[], reason: string, spooled: { to: string | null } = { to: null }): string {
    try {
      spooled.to = this.spool.append(ops, reason, this.clock.now());
      this.spooledRecords++;
      this.emit({
        type: "store.spooled",
        path: this.location.path,
        file: spooled.to,
        reason,
        ops: ops.length,
      });
      return ` The write was kept in ${spooled.to}.`;
    } catch (error) {
      return ` Writing it to the spool in ${this.spoolDir} failed too (${(error as Error).message}): it was NOT stored.`;
    }
  }

  private folder(): string {
    return dirname(this.location.path);
  }
}
