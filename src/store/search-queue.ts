// Keeps the full-text index (search.db) in step with state.db. Each committed message leaves an
// entry in search_queue in the same transaction; flushing moves entries into the index and then
// drops them, so a crash in between only means indexing them again. When the index is damaged,
// search reports itself degraded and the index is rebuilt from the transcript in the background.
// A full disk is not damage: the index is kept as it is, the entries wait in state.db, and
// indexing goes on by itself once there is space again.
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
  private retry: { timer: NodeJS.Timeout; delay: number } | null = null;
  private retryDelay = RETRY_FIRST_MS;
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

  /** Open the index; a missing, foreign or damaged one is rebuilt in the background. */
  start(): void {
    let reason = "the index was missing or damaged";
    try {
      if (this.index.open()) {
        this.status = "ok";
        this.schedule();
        return;
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
    const started = Date.now();
    let moved = 0;
    for (;;) {
      let rows: QueueRow[];
      try {
        rows = this.take.all(BATCH) as QueueRow[];
      } catch {
        return moved; // state.db trouble is the store's to report, on its next write
      }
      if (rows.length === 0) return moved;
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
        return moved;
      }
      try {
        this.db.transaction(() => {
          for (const r of rows) this.drop.run(r.message_id, r.op);
        })();
      } catch (error) {
        // Busy (another writer) or worse: the entries stay queued and are indexed again later;
        // on a full disk, not before there may be space again.
        if (isDiskFull(error)) this.later(() => this.schedule());
        else this.schedule();
        return moved;
      } finally {
        this.afterWrite();
      }
      moved += rows.length;
      if (rows.length < BATCH) return moved;
      if (Date.now() - started >= budgetMs) {
        this.schedule();
        return moved;
      }
    }
  }

  /**
   * The index failed. A full disk leaves it whole: indexing pauses and is tried again later.
   * Anything else: say so, and rebuild it from the transcript.
   */
  degrade(error: unknown): void {
    if (this.status !== "ok") return;
    if (isDiskFull(error)) {
      this.status = "paused";
      this.detail = `the disk holding ${this.index.path} is full (${(error as Error).message}); the index is kept as it is, new messages wait in state.db and are indexed once there is space`;
      this.emit({ type: "search.degraded", path: this.index.path, detail: this.detail });
      this.later(() => this.resume());
      return;
    }
    this.status = "degraded";
    this.detail = `the full-text index ${this.index.path} failed: ${(error as Error).message}`;
    this.emit({ type: "search.degraded", path: this.index.path, detail: this.detail });
    void this.rebuild(this.detail).catch(() => {});
  }

  /** After a pause: index what waits; a disk still full pauses again. */
  private resume(): void {
    if (this.stopped || this.status !== "paused") return;
    this.status = "ok";
    // A disk still full pauses again (flush hands the failure to degrade).
    const moved = this.flush();
    if (this.status !== "ok") return;
    this.retryDelay = RETRY_FIRST_MS;
    this.detail = null;
    this.emit({ type: "search.resumed", path: this.index.path, indexed: moved });
  }

  /** Run `then` after the retry delay, which doubles each time up to its cap. */
  private later(then: () => void): void {
    if (this.stopped || this.retry !== null) return;
    const delay = this.retryDelay;
    this.retryDelay = Math.min(delay * 2, RETRY_MAX_MS);
    const timer = setTimeout(() => {
      this.retry = null;
      then();
    }, delay);
    timer.unref();
    this.retry = { timer, delay };
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
    this.detail = `rebuilding the full-text index (${reason})`;
    let messages = 0;
    try {
      // The new index is built beside the old one and takes its place only when whole.
      await this.index.replaceWith(async (fresh) => {
        const chunk = this.db.prepare(
          "SELECT id, content, content_kind, tool_calls FROM messages WHERE id > ? ORDER BY id LIMIT 5000",
        );
        let last = 0;
        for (;;) {
          if (this.stopped) throw new Error("the store was closed during the rebuild");
          const rows = chunk.all(last) as {
            id: number;
            content: string | null;
            content_kind: string;
            tool_calls: string | null;
          }[];
          if (rows.length === 0) break;
          fresh.apply(
            rows.map((r) => ({ id: r.id, text: indexText(r.content, r.content_kind, r.tool_calls) })),
          );
          messages += rows.length;
          last = rows[rows.length - 1]?.id ?? last;
          await new Promise((resolve) => setImmediate(resolve));
        }
      });
      this.status = "ok";
      this.detail = null;
      this.retryDelay = RETRY_FIRST_MS;
      this.flush();
      const result = { messages, duration_ms: Date.now() - started };
      this.emit({ type: "search.rebuilt", path: this.index.path, ...result });
      return result;
    } catch (error) {
      this.status = "degraded";
      this.detail = `rebuilding the full-text index failed: ${(error as Error).message}${isDiskFull(error) ? " (the disk is full; the old index is kept, and the rebuild is tried again)" : ""}`;
      // A failed rebuild (a full disk, a file it could not replace) is tried again by itself.
      this.later(() => void this.rebuild(reason).catch(() => {}));
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
    if (this.retry !== null) clearTimeout(this.retry.timer);
    this.retry = null;
    this.index.close();
  }
}

function isDiskFull(error: unknown): boolean {
  return classifySqliteError(error) === "full" || (error as NodeJS.ErrnoException | null)?.code === "ENOSPC";
}
