// The full-text index lives in its own file (search.db), apart from the transcript: damage to it can
// never touch a message, and it can be deleted and rebuilt from state.db at any time. It is a
// contentless FTS5 table keyed by message id; the text itself stays in state.db only.
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { classifySqliteError } from "./errors.js";
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

export class SearchIndex {
  private db: Database.Database | null = null;
  /** The file's inode when it was opened: another process's rebuild replaces the file. */
  private inode: number | null = null;
  /** Why the last open() returned false, for people ("does not exist", ...). */
  problem: string | null = null;

  constructor(
    readonly path: string,
    private readonly storeId: string,
    private readonly readonly: boolean,
    /** A rebuild's new file is written with a rollback journal, so it is whole in one file. */
    private readonly journal: "wal" | "delete" = "wal",
  ) {}

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
        db.pragma(this.journal === "wal" ? "journal_mode = WAL" : "journal_mode = DELETE");
        db.pragma("synchronous = NORMAL");
        db.exec(`
          CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
          CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
            text, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
          );
        `);
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
    const db = this.requireDb();
    // Read touched pages from the file, not a stale cache, so damage is noticed by the next flush.
    db.pragma("shrink_memory");
    const del = db.prepare("DELETE FROM fts WHERE rowid = ?");
    const ins = db.prepare("INSERT INTO fts (rowid, text) VALUES (?, ?)");
    db.transaction(() => {
      for (const item of items) {
        del.run(item.id);
        if (item.text !== null && item.text !== "") ins.run(item.id, item.text);
      }
    })();
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

  /**
   * Build a new index in a file of its own beside this one (`fill` writes it), and only once it is
   * whole put it in place: the old file is moved aside (kept once, for inspection) and the new
   * one renamed over it. A build that fails (a full disk, say) leaves the old index exactly as it
   * was, so no failure can leave an empty or half-made search.db behind.
   */
  async replaceWith(fill: (fresh: SearchIndex) => Promise<void>): Promise<void> {
    const building = `${this.path}.rebuild`;
    removeDatabase(building);
    const fresh = new SearchIndex(building, this.storeId, false, "delete");
    try {
      if (!fresh.open()) throw new Error(`could not create a new search index at ${building}`);
      await fill(fresh);
      fresh.close();
    } catch (error) {
      fresh.close();
      removeDatabase(building);
      throw error;
    }
    this.close();
    removeDatabase(`${this.path}.damaged`);
    for (const suffix of ["", "-wal", "-shm"])
      if (existsSync(this.path + suffix)) renameSync(this.path + suffix, `${this.path}.damaged${suffix}`);
    renameSync(building, this.path);
    if (!this.open()) throw new Error(`could not open the rebuilt search index at ${this.path}`);
  }

  private requireDb(): Database.Database {
    if (this.db !== null && this.inode !== currentInode(this.path)) {
      // Another process rebuilt the index into a new file: follow it, or our writes would go to
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
