// The full-text index lives in its own file (search.db), apart from the transcript: damage to it can
// never touch a message, and it can be deleted and rebuilt from state.db at any time. It is a
// contentless FTS5 table keyed by message id; the text itself stays in state.db only. A rebuild
// clears and refills it in place, in the same file, so every handle on it (another Store, a
// reader) keeps seeing one index; only a file too damaged to clear is replaced.
import { copyFileSync, existsSync, rmSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { classifySqliteError } from "./errors.js";
import { PageReread } from "./page-reread.js";
import { createPrivateFile } from "./private-file.js";

export interface IndexItem {
  id: number;
  /** The text to index, or null to remove the message from the index. */
  text: string | null;
}

/** Above this many matches for one word, results come newest first rather than ranked. */
export const BROAD_MATCHES = 2000;

export type SearchOrder = "relevance" | "recent";

export interface SearchHit {
  id: number;
  rank: number;
}

const CREATE_FTS = `CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
  text, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
)`;
/** A rebuild in progress marks the index in its meta table: `rebuilding:TOKEN` = when it began. */
const REBUILDING = "rebuilding:";

/** The index file is damaged past clearing in place (or is another store's). */
class IndexUnusableError extends Error {
  override readonly name = "IndexUnusableError";
}

export class SearchIndex {
  private db: Database.Database | null = null;
  /** The file's inode when it was opened: a file too damaged to clear is replaced by a new one. */
  private inode: number | null = null;
  /** Why the last open() returned false, for people ("does not exist", ...). */
  problem: string | null = null;

  /** When a write reads its pages from the file again (page-reread.ts): damage is noticed by the next write. */
  private readonly reread: PageReread;

  constructor(
    readonly path: string,
    private readonly storeId: string,
    private readonly readonly: boolean,
    now: () => number = Date.now,
  ) {
    this.reread = new PageReread([path, `${path}-wal`], "changed", now);
  }

  /**
   * Open (creating it if needed). Returns false when the file is missing, damaged or of another
   * store; read-only, also when it cannot be read at all (an empty file, say), so a reader never
   * fails for its index: search says it is unavailable, and why.
   */
  open(): boolean {
    this.problem = null;
    if (this.readonly && !existsSync(this.path)) {
      this.problem = "does not exist";
      return false;
    }
    try {
      if (!this.readonly) createPrivateFile(this.path);
      const db = new Database(this.path, {
        readonly: this.readonly,
        fileMustExist: this.readonly,
        timeout: 5000,
      });
      this.db = db;
      this.inode = statSync(this.path).ino;
      if (!this.readonly) {
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = NORMAL");
        db.exec(
          `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); ${CREATE_FTS};`,
        );
        db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', ?)").run(this.storeId);
      }
      const owner = db.prepare("SELECT value FROM meta WHERE key = 'store_id'").pluck().get();
      if (owner !== this.storeId) {
        this.close();
        this.problem = "belongs to another store";
        return false;
      }
      return true;
    } catch (error) {
      this.close();
      this.problem = `cannot be opened (${(error as Error).message})`;
      if (this.readonly || classifySqliteError(error) === "corrupt") return false;
      throw error;
    }
  }

  get isOpen(): boolean {
    return this.db !== null;
  }

  apply(items: readonly IndexItem[]): void {
    this.write((db) => applyItems(db, items));
  }

  /**
   * One chunk of a rebuild: `read` takes it from state.db while this index's write lock is held,
   * so a change another handle indexes lands either before the read (and the read sees it in
   * state.db) or after the chunk (and overrides it). Returns what was read.
   */
  fill(read: () => IndexItem[]): IndexItem[] {
    return this.write((db) => {
      const items = read();
      applyItems(db, items);
      return items;
    });
  }

  /**
   * Begin a rebuild in place: under one write lock, mark it and clear the index. A file too
   * damaged to clear (its pages unreadable) or another store's is replaced by a new one, which
   * handles follow by its inode. With `keepDamaged`, the file as it was is first copied once to
   * `.damaged`, for inspection (unless a rebuild is already under way: it is no longer as found).
   * `atClear` runs under the same lock (the refill's end is read there: what is committed
   * later reaches the index through the queue). Returns its value and the earlier rebuilds this
   * one covers: they began before its clear, so once it is done the index is whole whether or
   * not they ever finish.
   */
  beginRebuild<T>(token: string, keepDamaged: boolean, atClear: () => T): { covered: string[]; value: T } {
    let kept = false;
    try {
      if (keepDamaged && this.rebuildsUnderWay().length === 0) {
        this.keepDamagedCopy();
        kept = true;
      }
      if (!this.isOpen && !this.open())
        throw new IndexUnusableError(`the index ${this.problem ?? "cannot be used"}`);
      return this.clear(token, atClear);
    } catch (error) {
      if (!(error instanceof IndexUnusableError) && classifySqliteError(error) !== "corrupt") throw error;
      if (!kept) this.keepDamagedCopy();
      this.replaceFile();
      return this.clear(token, atClear);
    }
  }

  /** The rebuild is whole: drop its mark and those of the rebuilds it covers. */
  endRebuild(token: string, covered: readonly string[]): void {
    this.write((db) => {
      const drop = db.prepare("DELETE FROM meta WHERE key = ?");
      for (const t of [token, ...covered]) drop.run(REBUILDING + t);
    });
  }

  /** The rebuilds marked in the index (by any handle): while there is one, it is not whole. */
  rebuildsUnderWay(): string[] {
    try {
      const keys = this.requireDb()
        .prepare("SELECT key FROM meta WHERE key LIKE ?")
        .pluck()
        .all(`${REBUILDING}%`) as string[];
      return keys.map((k) => k.slice(REBUILDING.length));
    } catch {
      return []; // unreadable: its searches say so themselves
    }
  }

  private clear<T>(token: string, atClear: () => T): { covered: string[]; value: T } {
    return this.write((db) => {
      const covered = this.rebuildsUnderWay();
      db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").run(
        REBUILDING + token,
        new Date().toISOString(),
      );
      db.exec(`DROP TABLE IF EXISTS fts; ${CREATE_FTS};`);
      // Damage outside the index proper (the meta table, the free list) would survive the clear.
      const problems = (db.pragma("quick_check", { simple: false }) as { quick_check: string }[])
        .map((r) => r.quick_check)
        .filter((r) => r !== "ok");
      if (problems.length > 0) throw new IndexUnusableError(`the index is damaged: ${problems.join("; ")}`);
      return { covered, value: atClear() };
    });
  }

  private keepDamagedCopy(): void {
    const damaged = `${this.path}.damaged`;
    removeDatabase(damaged);
    try {
      for (const suffix of ["", "-wal"])
        if (existsSync(this.path + suffix)) copyFileSync(this.path + suffix, damaged + suffix);
    } catch (error) {
      removeDatabase(damaged); // no half copy; on a full disk the rebuild waits for space
      throw error;
    }
  }

  /**
   * Start a new file in place of one that cannot be cleared. The old file's write lock is held
   * meanwhile, so another handle's write lands before (and the refill, which reads state.db
   * afterwards, covers it) or finds the new file (writes check the inode under the lock).
   */
  private replaceFile(): void {
    const old = this.db;
    this.db = null;
    this.inode = null;
    let locked = false;
    try {
      old?.exec("BEGIN IMMEDIATE");
      locked = true;
    } catch {
      // Too damaged to lock: then too damaged for anyone to write to, too.
    }
    try {
      removeDatabase(this.path);
      if (!this.open())
        throw new Error(`could not create a new search index at ${this.path}: ${this.problem}`);
    } finally {
      try {
        if (locked) old?.exec("ROLLBACK");
        // SQLite sees the file has gone and neither checkpoints nor deletes the new file's WAL.
        old?.close();
      } catch {
        // A damaged file may fail to close cleanly; it is gone anyway.
      }
    }
  }

  /**
   * Run `fn` in a write transaction, once the lock is held and the file is still the one this
   * handle has open (another handle may have replaced a file too damaged to clear).
   */
  private write<T>(fn: (db: Database.Database) => T): T {
    for (let attempt = 0; ; attempt++) {
      const db = this.requireDb();
      // Read touched pages from the file, not a stale cache, once the file changed under this
      // handle, so damage is noticed by the next write.
      if (this.reread.beforeCommit()) db.pragma("shrink_memory");
      try {
        const result = db
          .transaction(() =>
            this.inode === currentInode(this.path) || attempt >= 2 ? { value: fn(db) } : null,
          )
          .immediate();
        if (result !== null) return result.value;
      } finally {
        this.reread.ownCommit();
      }
    }
  }

  /**
   * Search with an FTS5 expression. Ranking scores every match, which costs about a microsecond
   * each: fine for specific words, seconds for a word in most messages. So when any word of the
   * query matches more than BROAD_MATCHES messages, the newest matches come first instead (that
   * costs only the messages returned); the result says which order it used.
   */
  query(expression: string, limit: number): { hits: SearchHit[]; order: SearchOrder } {
    const db = this.requireDb();
    const count = db
      .prepare("SELECT count(*) FROM (SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ?)")
      .pluck();
    const words = [...new Set(expression.match(/[^\s"]+/g)?.filter((w) => w !== "AND") ?? [])];
    const broad = words.some((word) => (count.get(`"${word}"`, BROAD_MATCHES + 1) as number) > BROAD_MATCHES);
    const sql = broad
      ? "SELECT rowid AS id, 0 AS rank FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ?"
      : "SELECT rowid AS id, bm25(fts) AS rank FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?";
    return {
      hits: db.prepare(sql).all(expression, limit) as SearchHit[],
      order: broad ? "recent" : "relevance",
    };
  }

  /** FTS5's own structural check, plus SQLite's page check of the file. */
  check(): string | null {
    const db = this.requireDb();
    try {
      const rows = db.pragma("quick_check", { simple: false }) as { quick_check: string }[];
      const problems = rows.map((r) => r.quick_check).filter((r) => r !== "ok");
      if (problems.length > 0) return problems.join("; ");
      if (!this.readonly) db.prepare("INSERT INTO fts (fts) VALUES ('integrity-check')").run();
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  }

  count(): number {
    return this.requireDb().prepare("SELECT count(*) FROM fts").pluck().get() as number;
  }

  close(): void {
    this.inode = null;
    try {
      this.db?.close();
    } catch {
      // A damaged index may fail to close cleanly; it is rebuilt from state.db anyway.
    }
    this.db = null;
  }

  private requireDb(): Database.Database {
    if (this.db !== null && this.inode !== currentInode(this.path)) {
      // Another handle replaced a file too damaged to clear: follow it, or our writes would go to
      // the old one, which nobody reads any more.
      this.close();
      this.open();
    }
    if (this.db === null) throw new Error("search index is not open");
    return this.db;
  }
}

/** Turn what a user typed into an FTS5 expression that cannot be a syntax error: every word must match. */
export function toFtsQuery(input: string): string | null {
  const terms: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (const match of input.matchAll(re)) {
    const raw = (match[1] ?? match[2] ?? "").replaceAll('"', "");
    const words = raw.split(/[^\p{L}\p{N}_]+/u).filter((w) => w !== "");
    if (words.length === 0) continue;
    terms.push(`"${words.join(" ")}"`);
  }
  return terms.length === 0 ? null : terms.join(" AND ");
}

/** The phrases of an expression toFtsQuery made (each one must match), for snippets and PostgreSQL. */
export function phrasesOf(expression: string): string[] {
  return expression.match(/"[^"]*"/g)?.map((t) => t.slice(1, -1)) ?? [];
}

/** A window of the text around the first matching word, as search results show it. */
export function snippet(text: string, terms: readonly string[], width = 80): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const term of terms) {
    const first = term.split(" ")[0]?.toLowerCase() ?? "";
    const i = first === "" ? -1 : lower.indexOf(first);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  const start = Math.max(0, at - width / 2);
  const piece = text.slice(start, start + width).replace(/\s+/g, " ");
  return `${start > 0 ? "…" : ""}${piece}${start + width < text.length ? "…" : ""}`;
}

/** The searchable text of a message: its text content and the names and arguments of its tool calls. */
export function indexText(content: string | null, kind: string, toolCalls: string | null): string {
  const parts: string[] = [];
  if (content !== null) parts.push(kind === "parts" ? textOfParts(content) : content);
  if (toolCalls !== null) {
    try {
      const calls = JSON.parse(toolCalls) as { function?: { name?: string; arguments?: string } }[];
      for (const call of Array.isArray(calls) ? calls : []) {
        if (call.function?.name) parts.push(call.function.name);
        if (call.function?.arguments) parts.push(call.function.arguments);
      }
    } catch {
      parts.push(toolCalls);
    }
  }
  return parts.join("\n");
}

function textOfParts(content: string): string {
  try {
    const parts = JSON.parse(content) as { type?: string; text?: string }[];
    return Array.isArray(parts)
      ? parts.map((p) => (typeof p.text === "string" ? p.text : "")).join("\n")
      : content;
  } catch {
    return content;
  }
}

/** Each item's text in the index, replacing what its message had there; none removes it. */
function applyItems(db: Database.Database, items: readonly IndexItem[]): void {
  const del = db.prepare("DELETE FROM fts WHERE rowid = ?");
  // FTS5 replaces the row of that rowid, its old terms included: one statement a message, not two.
  const put = db.prepare("INSERT OR REPLACE INTO fts (rowid, text) VALUES (?, ?)");
  for (const item of items) {
    if (item.text !== null && item.text !== "") put.run(item.id, item.text);
    else del.run(item.id);
  }
}

/** A database file and the journals SQLite may keep beside it. */
function removeDatabase(path: string): void {
  for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(path + suffix, { force: true });
}

function currentInode(path: string): number | null {
  try {
    return statSync(path).ino;
  } catch {
    return null;
  }
}
