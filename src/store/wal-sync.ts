// Durable commits without blocking the event loop. With `store.synchronous: full` the writer
// commits with SQLite's synchronous=NORMAL (the WAL frames are written but not synced; SQLite
// still syncs around checkpoints and when the WAL restarts), and this syncs the WAL file on
// libuv's thread pool before any write of the group is acknowledged. A committed transaction is
// then on disk exactly as with synchronous=FULL, but the sync no longer stops every other request:
// later groups commit while an earlier one's sync runs, and waiting writes share the next sync.
//
// The store's other commits on the connection (the search queue, the key ledger) are not synced
// by themselves; each says it wrote (`touched`), and a sync that was running meanwhile is followed
// by another before its waiters are answered: at every acknowledgement nothing written to the WAL
// before it is unsynced, a committed write or not (a commit that failed half-way leaves frames).
//
// A failed sync is final for this process: after a write-back error the kernel may have dropped
// the pages it could not write, and a later successful sync would not bring them back, so no
// later write can be acknowledged as durable either (the store spools them; see Store).
import { closeSync, fdatasync, fdatasyncSync, openSync } from "node:fs";

/** The file calls WalSync makes (the real ones unless a test gives its own). */
export interface WalFiles {
  openSync(path: string, flags: "r"): number;
  fdatasync(fd: number, done: (error: NodeJS.ErrnoException | null) => void): void;
  fdatasyncSync(fd: number): void;
  closeSync(fd: number): void;
}

const REAL_FILES: WalFiles = { openSync, fdatasync, fdatasyncSync, closeSync };

export class WalSync {
  private fd: number | null = null;
  /** The sync running now, and the one that starts when it ends (for writes made meanwhile). */
  private running: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private failure: Error | null = null;
  private closed = false;
  /** Waiters for a next sync were served by the final sync at close. */
  private finalSynced = false;
  /** Nothing is written after the final sync (see `seal`): it answers every later sync. */
  private sealed = false;
  /** Commits outside the groups so far (see `touched`). */
  private touches = 0;

  constructor(
    private readonly walPath: string,
    private readonly files: WalFiles = REAL_FILES,
  ) {}

  /** A commit outside the groups wrote to the WAL (or tried to): the next answers cover it. */
  touched(): void {
    this.touches++;
  }

  /** Resolves once every frame written to the WAL before this call is on disk. */
  sync(): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.sealed) return Promise.resolve();
    if (this.running === null) return this.start();
    // The running sync may have begun before the caller's frames were written: the next one.
    this.next ??= this.running.then(
      () => this.afterRunning(),
      () => this.afterRunning(),
    );
    return this.next;
  }

  /** The same, at once, blocking (a store closing commits what waits and syncs it). */
  syncNow(): void {
    if (this.failure !== null) throw this.failure;
    try {
      this.files.fdatasyncSync(this.open());
    } catch (error) {
      throw this.failed(error);
    }
  }

  /**
   * Close the file once no sync uses it (a queued thread-pool call must never meet a reused fd).
   * Writes still waiting for a next sync get it now, blocking: they were committed before this.
   */
  close(): void {
    if (this.closed) return;
    if (this.next !== null && this.failure === null) {
      try {
        this.syncNow();
        this.finalSynced = true;
      } catch {
        // Their waiters get the failure.
      }
    }
    this.closed = true;
    if (this.running === null) this.closeFd();
  }

  /**
   * The connection has stopped writing for good (the store met damage): sync what it wrote, now,
   * blocking, and close. A sync asked for later, for frames written before (a group committed just
   * before the damage was found, a resync after a commit outside the groups), is answered by that
   * one, since nothing can have been written after it; it is never a failed disk.
   */
  seal(): void {
    if (this.closed) return;
    if (this.failure === null) {
      try {
        this.files.fdatasyncSync(this.open());
        this.sealed = true;
      } catch (error) {
        // No WAL file: nothing was written, so nothing to sync. Any other error: syncs get it.
        if ((error as NodeJS.ErrnoException).code === "ENOENT") this.sealed = true;
        else this.failed(error);
      }
    }
    this.close();
  }

  private afterRunning(): Promise<void> {
    this.next = null;
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.closed)
      return this.finalSynced || this.sealed ? Promise.resolve() : Promise.reject(this.closedError());
    return this.start();
  }

  private closedError(): Error {
    return new Error(`${this.walPath} is closed`);
  }

  private start(): Promise<void> {
    const seen = this.touches;
    const run = new Promise<void>((resolve, reject) => {
      let fd: number;
      try {
        fd = this.open();
      } catch (error) {
        reject(this.failed(error));
        return;
      }
      this.files.fdatasync(fd, (error) => (error ? reject(this.failed(error)) : resolve()));
    });
    this.running = run;
    const settled = () => {
      if (this.running === run) this.running = null;
      if (this.closed && this.running === null) this.closeFd();
    };
    run.then(settled, settled);
    // A commit outside the groups that wrote while this ran is not covered by it: sync again.
    return run.then(() => (this.touches === seen ? undefined : this.sync()));
  }

  private open(): number {
    if (this.closed) throw this.closedError();
    // Read-only is enough: a sync applies to the file, whichever descriptor asks for it.
    this.fd ??= this.files.openSync(this.walPath, "r");
    return this.fd;
  }

  private failed(error: unknown): Error {
    this.failure ??= error instanceof Error ? error : new Error(String(error));
    return this.failure;
  }

  private closeFd(): void {
    if (this.fd === null) return;
    try {
      this.files.closeSync(this.fd);
    } catch {
      // Nothing left to keep: the store is closing.
    }
    this.fd = null;
  }
}
