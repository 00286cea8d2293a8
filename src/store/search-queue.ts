// Keeps the full-text index (search.db) in step with state.db. Each committed message leaves an
// entry in search_queue in the same transaction; flushing moves entries into the index and then
// drops them, so a crash in between only means indexing them again. When the index is damaged,
// search reports itself degraded and the index is rebuilt from the transcript in the background.
// A full disk is not damage: the index is kept as it is, the entries wait in state.db, and
// indexing goes on by itself once there is space again. One retry timer serves every wait (a
// pause, a failed rebuild); what it does when it fires follows from the state then.
import { randomUUID } from "node:crypto";
import type Database from "better-sqlite3";
import { classifySqliteError } from "./errors.js";
import { type IndexItem, indexText, type SearchIndex } from "./search-index.js";
import type { StoreEvent } from "./store.js";

/** `paused`: the index is whole but the disk took no more; what is queued waits for space. */
type Status = "ok" | "rebuilding" | "degraded" | "paused";

interface QueueRow {
  message_id: number;
  op: string;
  content: string | null;
  content_kind: string | null;
  tool_calls: string | null;
}

/** Entries per index transaction; a slice ends after the batch that crosses its budget. */
const BATCH = 2000;
/** How long after a write the index is brought up to date: long enough to take a burst at once. */
const FLUSH_DELAY_MS = 25;
/** How long one scheduled flush may hold the event loop; the rest follows in later slices. */
const SLICE_MS = 50;
/** After a full disk or a failed rebuild, try again after this long, doubling up to the cap. */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;

export class SearchQueue {
  private status: Status = "rebuilding";
  private detail: string | null = null;
  private stopped = false;
  private scheduled: NodeJS.Timeout | null = null;
  private rebuilding: Promise<{ messages: number; duration_ms: number }> | null = null;
  private rebuildReason = "requested";
  /** The index was found damaged: its rebuild keeps a copy of it first. */
  private damaged = false;
  /** The one retry timer: a new retry replaces a pending one. */
  private retry: NodeJS.Timeout | null = null;
  private retryDelay = RETRY_FIRST_MS;
  /** After a pause, what has been indexed since; `search.resumed` says it once the queue is empty. */
  private resuming: number | null = null;
  private readonly take;
  private readonly drop;

  constructor(
    private readonly db: Database.Database,
    readonly index: SearchIndex,
    private readonly emit: (event: StoreEvent) => void,
    /** Told after each commit to state.db (or an attempt): the store's WAL sync must cover it. */
    private readonly afterWrite: () => void = () => {},
  ) {
    this.take = db.prepare(
      `SELECT q.message_id, q.op, m.content, m.content_kind, m.tool_calls
         FROM search_queue q LEFT JOIN messages m ON m.id = q.message_id ORDER BY q.message_id LIMIT ?`,
    );
    // Only the exact entry that was indexed: one replaced meanwhile (index -> delete) stays queued.
    this.drop = db.prepare("DELETE FROM search_queue WHERE message_id = ? AND op = ?");
  }

  /** Open the index; a missing, foreign, damaged or half-rebuilt one is rebuilt in the background. */
  start(): void {
    let reason = "the index was missing or damaged";
    try {
      if (this.index.open()) {
        // A rebuild that never finished (its process ended) left the index partly filled.
        if (this.index.rebuildsUnderWay().length === 0) {
          this.status = "ok";
          this.schedule();
          return;
        }
        reason = "an earlier rebuild did not finish";
      } else {
        this.damaged = true;
      }
    } catch (error) {
      // Any other failure to open the derived index (a disk I/O error, say) must not stop the
      // store from opening: search is degraded and rebuilt, as for a damaged file.
      reason = `the index could not be opened: ${(error as Error).message}`;
    }
    void this.rebuild(reason).catch(() => {});
  }

  get ready(): boolean {
    return this.status === "ok" && this.index.isOpen;
  }

  /** Flush soon, after the current burst of writes, one time slice at a time. */
  schedule(): void {
    if (this.scheduled !== null || this.stopped) return;
    this.scheduled = setTimeout(() => {
      this.scheduled = null;
      this.flush(SLICE_MS);
    }, FLUSH_DELAY_MS);
    this.scheduled.unref();
  }

  /**
   * Move queued entries into the index; returns how many were moved. With a budget it stops
   * after that many milliseconds and schedules the rest, so a long queue never blocks for long.
   */
  flush(budgetMs = Number.POSITIVE_INFINITY): number {
    if (!this.ready || this.stopped) return 0;
    const { moved, outcome } = this.move(budgetMs);
    if (this.resuming !== null) this.resuming += moved;
    if (outcome === "failed") return moved;
    // It went through: nothing waits to be retried, and the next failure backs off from the start.
    this.clearRetry();
    this.retryDelay = RETRY_FIRST_MS;
    if (outcome === "more") this.schedule();
    else if (this.resuming !== null) {
      const indexed = this.resuming;
      this.resuming = null;
      this.emit({ type: "search.resumed", path: this.index.path, indexed });
    }
    return moved;
  }

  private move(budgetMs: number): { moved: number; outcome: "done" | "more" | "failed" } {
    const started = Date.now();
    let moved = 0;
    for (;;) {
      let rows: QueueRow[];
      try {
        rows = this.take.all(BATCH) as QueueRow[];
      } catch {
        // state.db trouble is the store's to report; indexing is tried again all the same.
        this.later();
        return { moved, outcome: "failed" };
      }
      if (rows.length === 0) return { moved, outcome: "done" };
      const items: IndexItem[] = rows.map((r) => ({
        id: r.message_id,
        text:
          r.op === "delete" || r.content_kind === null
            ? null
            : indexText(r.content, r.content_kind, r.tool_calls),
      }));
      try {
        this.index.apply(items);
      } catch (error) {
        this.degrade(error);
        return { moved, outcome: "failed" };
      }
      try {
        this.db.transaction(() => {
          for (const r of rows) this.drop.run(r.message_id, r.op);
        })();
      } catch (error) {
        // The entries stay queued and are indexed again later: after a pause on a full disk (as
        // for the index's own), soon when another writer held the lock.
        if (isDiskFull(error)) this.pause(error, this.db.name);
        else this.schedule();
        return { moved, outcome: "failed" };
      } finally {
        this.afterWrite();
      }
      moved += rows.length;
      if (rows.length < BATCH) return { moved, outcome: "done" };
      if (Date.now() - started >= budgetMs) return { moved, outcome: "more" };
    }
  }

  /**
   * The index failed. A full disk leaves it whole: indexing pauses and is tried again later.
   * Anything else: say so, and rebuild it from the transcript.
   */
  degrade(error: unknown): void {
    if (this.status !== "ok") return;
    if (isDiskFull(error)) {
      this.pause(error, this.index.path);
      return;
    }
    this.status = "degraded";
    this.resuming = null;
    this.damaged = true;
    this.detail = `the full-text index ${this.index.path} failed: ${(error as Error).message}`;
    this.emit({ type: "search.degraded", path: this.index.path, detail: this.detail });
    void this.rebuild(this.detail).catch(() => {});
  }

  /** A full disk (the index's, or state.db's as indexed entries are dropped): wait for space. */
  private pause(error: unknown, file: string): void {
    if (this.status !== "ok") return;
    this.status = "paused";
    this.detail = `the disk holding ${file} is full (${(error as Error).message}); the index is kept as it is, new messages wait in state.db and are indexed once there is space`;
    this.emit({ type: "search.degraded", path: this.index.path, detail: this.detail });
    this.later();
  }

  /** After a pause: index what waits, in slices; a disk still full pauses again. */
  private resume(): void {
    if (this.stopped || this.status !== "paused") return;
    this.status = "ok";
    this.detail = null;
    this.resuming ??= 0;
    this.flush(SLICE_MS);
  }

  /** Arm the retry timer (replacing a pending one); its delay doubles each time up to its cap. */
  private later(): void {
    if (this.stopped) return;
    this.clearRetry();
    const delay = this.retryDelay;
    this.retryDelay = Math.min(delay * 2, RETRY_MAX_MS);
    this.retry = setTimeout(() => {
      this.retry = null;
      this.retryNow();
    }, delay);
    this.retry.unref();
  }

  private retryNow(): void {
    switch (this.status) {
      case "paused":
        this.resume();
        return;
      case "degraded":
        void this.rebuild(this.rebuildReason).catch(() => {});
        return;
      case "ok":
        this.schedule();
        return;
      case "rebuilding":
        return; // the rebuild under way sets what comes next
      default: {
        const never: never = this.status;
        throw new Error(`unknown search status ${String(never)}`);
      }
    }
  }

  private clearRetry(): void {
    if (this.retry !== null) clearTimeout(this.retry);
    this.retry = null;
  }

  /** Rebuild the index from every message in state.db, in chunks that let other work run between them. */
  rebuild(reason = "requested"): Promise<{ messages: number; duration_ms: number }> {
    if (this.rebuilding !== null) return this.rebuilding;
    this.rebuilding = this.doRebuild(reason).finally(() => {
      this.rebuilding = null;
    });
    return this.rebuilding;
  }

  private async doRebuild(reason: string): Promise<{ messages: number; duration_ms: number }> {
    const started = Date.now();
    this.status = "rebuilding";
    this.resuming = null;
    this.rebuildReason = reason;
    this.detail = `rebuilding the full-text index (${reason})`;
    let messages = 0;
    let cleared = false;
    try {
      // In place, in the same file: every other handle on it keeps writing into the one index.
      // It refills what state.db holds at its clear; what is committed later is queued, and
      // whoever flushes it writes into this same index. So writes never keep it from ending.
      const token = randomUUID();
      const { covered, value: end } = this.index.beginRebuild(
        token,
        this.damaged,
        () => this.db.prepare("SELECT coalesce(max(id), 0) FROM messages").pluck().get() as number,
      );
      cleared = true;
      this.damaged = false;
      const chunk = this.db.prepare(
        "SELECT id, content, content_kind, tool_calls FROM messages WHERE id > ? AND id <= ? ORDER BY id LIMIT 5000",
      );
      let last = 0;
      for (;;) {
        if (this.stopped) throw new Error("the store was closed during the rebuild");
        const items = this.index.fill(() =>
          (
            chunk.all(last, end) as {
              id: number;
              content: string | null;
              content_kind: string;
              tool_calls: string | null;
            }[]
          ).map((r) => ({ id: r.id, text: indexText(r.content, r.content_kind, r.tool_calls) })),
        );
        if (items.length === 0) break;
        messages += items.length;
        last = items[items.length - 1]?.id ?? last;
        await new Promise((resolve) => setImmediate(resolve));
      }
      this.index.endRebuild(token, covered);
      this.status = "ok";
      this.detail = null;
      this.clearRetry();
      this.retryDelay = RETRY_FIRST_MS;
      // What was queued meanwhile follows, in slices.
      this.flush(SLICE_MS);
      const result = { messages, duration_ms: Date.now() - started };
      this.emit({ type: "search.rebuilt", path: this.index.path, ...result });
      return result;
    } catch (error) {
      this.status = "degraded";
      const full = isDiskFull(error);
      const kept = cleared
        ? "the index is partly rebuilt and says so to every search"
        : "the index is kept as it was";
      this.detail = `rebuilding the full-text index failed: ${(error as Error).message}${full ? ` (the disk is full; ${kept}, and the rebuild is tried again by itself once there is space)` : "; it is tried again by itself"}`;
      this.later();
      throw error;
    }
  }

  problem(): string | null {
    if (this.status === "ok") return null;
    const state = { rebuilding: "being rebuilt", paused: "paused", degraded: "degraded" }[this.status];
    return `full-text search is ${state}: ${this.detail}; transcripts are not affected`;
  }

  health(): { status: Status; detail: string | null; pending: number } {
    let pending = -1;
    try {
      pending = this.db.prepare("SELECT count(*) FROM search_queue").pluck().get() as number;
    } catch {
      // reported as -1: unknown
    }
    return { status: this.status, detail: this.detail, pending };
  }

  stop(): void {
    this.stopped = true;
    if (this.scheduled !== null) clearTimeout(this.scheduled);
    this.scheduled = null;
    this.clearRetry();
    this.index.close();
  }
}

function isDiskFull(error: unknown): boolean {
  return classifySqliteError(error) === "full" || (error as NodeJS.ErrnoException | null)?.code === "ENOSPC";
}
