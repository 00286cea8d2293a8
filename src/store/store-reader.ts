// Read access to a store: what a read-only reader (dashboard, read commands) and the writing store
// have in common. Readers open state.db and search.db read-only and never write a byte.

import type Database from "better-sqlite3";
import { UsageError } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { type CredentialState, readCredentialStates } from "./credential-ledger.js";
import { classifySqliteError, SearchUnavailableError } from "./errors.js";
import { listInstances } from "./instance-rows.js";
import type { InstanceView } from "./instance-types.js";
import { corruptStoreError, openDatabase } from "./open-database.js";
import type { StoreReads } from "./port.js";
import * as q from "./queries.js";
import { ReadView, type RepositoryReads } from "./read-view.js";
import { getResponse, latestResponseId, type ResponseView, responseWithItem } from "./response-rows.js";
import type { MessageView, SessionView, TurnView } from "./rows.js";
import { phrasesOf, SearchIndex, type SearchOrder, snippet, toFtsQuery } from "./search-index.js";

export interface SearchResultItem {
  message: MessageView;
  session_id: string;
  snippet: string;
  rank: number;
}

export interface SearchResult {
  query: string;
  /** "relevance": best matches first; "recent": a word matches so many messages that the newest come first. */
  order: SearchOrder;
  hits: SearchResultItem[];
  /** Messages stored but not yet in the index (they appear after the writer's next flush). */
  pending: number;
}

export interface StoreLocation {
  path: string;
  searchPath: string;
  spoolDir: string;
  profile: string;
}

/** What a SQLite read needs from the handle that owns the connections (the writer, or a reader). */
export interface SqliteReadSource {
  readonly location: StoreLocation;
  readDb(): Database.Database;
  searchIndex(): SearchIndex | null;
  /** Called before a search: the writer brings the index up to date here. */
  prepareSearch?(): void;
  /** A read met a damaged page: the writer stops writing at once. */
  onCorruptRead?(error: unknown): void;
  /** The search index failed a query: the writer degrades it (and rebuilds it). */
  onSearchFailure?(error: unknown): void;
  /** Why search cannot be used, when the index is not open (null: the usual words). */
  searchProblem?(): string | null;
}

/**
 * The SQLite engine's reads, shared by the writable store and the read-only reader (each holds one
 * over its own connections). Every read is async, as the port says; SQLite answers on the caller's
 * stack, so the promise is settled by the time it is returned (a failure is a rejection).
 */
export class SqliteReads implements RepositoryReads {
  constructor(private readonly source: SqliteReadSource) {}

  private get location(): StoreLocation {
    return this.source.location;
  }

  /**
   * Every read goes through here. A read that meets a damaged page becomes the store's typed
   * corruption error (with the salvage command), and the writer stops writing at once: a store
   * must never keep taking writes while its reads fail.
   */
  readNow<T>(query: (db: Database.Database) => T): T {
    try {
      return query(this.source.readDb());
    } catch (error) {
      if (classifySqliteError(error) !== "corrupt") throw error;
      this.source.onCorruptRead?.(error);
      throw corruptStoreError(this.location.path, this.location.profile, error);
    }
  }

  private async read<T>(query: (db: Database.Database) => T): Promise<T> {
    return this.readNow(query);
  }

  async runningTurns(): Promise<TurnView[]> {
    return this.read((db) => q.runningTurns(db));
  }

  async interruptedTurnsOf(owner: string, since: number): Promise<TurnView[]> {
    return this.read((db) => q.interruptedTurnsOf(db, owner, since));
  }

  async findConversation(hash: string): Promise<string | null> {
    return this.read((db) => q.findConversation(db, hash));
  }

  async conversationHash(sessionId: string): Promise<string | null> {
    return this.read((db) => q.conversationHash(db, sessionId));
  }

  async getRecord<T = unknown>(kind: string, key: string): Promise<T | null> {
    return this.read((db) => q.getRecord<T>(db, kind, key));
  }

  async recordStamp(kind: string): Promise<string> {
    return this.read((db) => q.recordStamp(db, kind));
  }

  async recordVersions(kind: string): Promise<Map<string, string>> {
    return this.read((db) => q.recordVersions(db, kind));
  }

  async getRecordText(kind: string, key: string): Promise<string | null> {
    return this.read((db) => q.getRecordText(db, kind, key));
  }

  async listRecords<T = unknown>(
    kind: string,
    options: { sessionId?: string } = {},
  ): Promise<q.RecordView<T>[]> {
    return this.read((db) => q.listRecords<T>(db, kind, options.sessionId));
  }

  async getResponse(id: string): Promise<ResponseView | null> {
    return this.read((db) => getResponse(db, id));
  }

  async responseWithItem(itemId: string): Promise<ResponseView | null> {
    return this.read((db) => responseWithItem(db, itemId));
  }

  async latestResponseId(sessionId: string): Promise<string | null> {
    return this.read((db) => latestResponseId(db, sessionId));
  }

  async credentialStates(): Promise<CredentialState[]> {
    return this.read((db) => readCredentialStates(db));
  }

  async listInstances(): Promise<InstanceView[]> {
    return this.read((db) => listInstances(db));
  }

  async listSessions(options: q.ListOptions = {}): Promise<SessionView[]> {
    return this.read((db) => q.listSessions(db, options));
  }

  async getSession(id: string): Promise<SessionView | null> {
    return this.read((db) => q.getSession(db, id));
  }

  async getMessages(sessionId: string): Promise<MessageView[]> {
    return this.read((db) => q.getMessages(db, sessionId));
  }

  async getTurns(sessionId: string): Promise<TurnView[]> {
    return this.read((db) => q.getTurns(db, sessionId));
  }

  async stats(): Promise<q.StoreStats> {
    return this.read((db) => q.storeStats(db, this.location.path));
  }

  /** A full session id from an id or a unique prefix of one; a clear error otherwise. */
  async resolveSessionId(idOrPrefix: string): Promise<string> {
    if (await this.getSession(idOrPrefix)) return idOrPrefix;
    const matches = this.readNow((db) => q.findSessionIds(db, idOrPrefix));
    if (matches.length === 1 && matches[0] !== undefined) return matches[0];
    if (matches.length > 1) {
      throw new UsageError(
        `session id prefix '${idOrPrefix}' matches several sessions: ${matches.join(", ")}`,
        {
          hint: "give more characters of the id",
        },
      );
    }
    throw new UsageError(`no session '${idOrPrefix}' in ${this.location.path}`, {
      hint: `list the sessions with: ${tenaxCommand(this.location.profile, ["sessions", "list"])}`,
    });
  }

  /** Full-text search; the writer's queue is flushed first (prepareSearch). */
  async search(query: string, options: { limit?: number } = {}): Promise<SearchResult> {
    const expression = toFtsQuery(query);
    if (expression === null) throw new UsageError("the search query has no words to look for");
    this.source.prepareSearch?.();
    const index = this.source.searchIndex();
    if (index === null || !index.isOpen) {
      throw new SearchUnavailableError("search_unavailable", this.searchProblem(), {
        hint: `rebuild it with: ${this.reindexCommand()}`,
      });
    }
    if (index.rebuildsUnderWay().length > 0) {
      // Another handle (a second store on this profile, another process) is refilling it in place.
      throw new SearchUnavailableError(
        "search_rebuilding",
        `full-text search is being rebuilt: the index ${index.path} is being refilled from the transcripts and answers again once it is whole; transcripts are not affected`,
        { hint: "search again in a moment" },
      );
    }
    let hits: { id: number; rank: number }[];
    let order: SearchOrder;
    try {
      ({ hits, order } = index.query(expression, options.limit ?? 20));
    } catch (error) {
      this.source.onSearchFailure?.(error);
      throw new SearchUnavailableError(
        "search_degraded",
        `full-text search is degraded: the index ${index.path} failed (${(error as Error).message}); transcripts are not affected`,
        { hint: `rebuild it with: ${this.reindexCommand()}` },
      );
    }
    const messages = this.readNow((db) =>
      q.getMessagesByIds(
        db,
        hits.map((h) => h.id),
      ),
    );
    const terms = phrasesOf(expression);
    const items: SearchResultItem[] = [];
    for (const hit of hits) {
      const message = messages.get(hit.id);
      if (!message) continue; // deleted since it was indexed
      items.push({
        message,
        session_id: message.session_id,
        snippet: snippet(message.content ?? "", terms),
        rank: hit.rank,
      });
    }
    const pending = this.readNow(
      (db) => db.prepare("SELECT count(*) FROM search_queue").pluck().get() as number,
    );
    return { query, order, hits: items, pending };
  }

  private reindexCommand(): string {
    return tenaxCommand(this.location.profile, ["sessions", "reindex"]);
  }

  private searchProblem(): string {
    return (
      this.source.searchProblem?.() ??
      `full-text search is unavailable: the index ${this.location.searchPath} is missing or damaged; transcripts are not affected`
    );
  }
}

/**
 * A read-only view of a profile's SQLite store, for the dashboard and read commands: the port's
 * reads (StoreReads) over connections that never write a byte.
 */
export class StoreReader extends ReadView implements StoreReads {
  readonly engine = "sqlite" as const;
  readonly where: string;
  private readonly db: Database.Database;
  private readonly index: SearchIndex;
  protected readonly reads: SqliteReads;

  constructor(readonly location: StoreLocation) {
    super();
    this.where = location.path;
    this.db = openDatabase(location.path, { readonly: true, profile: location.profile });
    const storeId = this.db.prepare("SELECT value FROM meta WHERE key = 'store_id'").pluck().get() as
      | string
      | undefined;
    this.index = new SearchIndex(location.searchPath, storeId ?? "", true);
    if (storeId !== undefined) this.index.open();
    this.reads = new SqliteReads({
      location,
      readDb: () => this.db,
      searchIndex: () => this.index,
      searchProblem: () => this.searchProblem(),
    });
  }

  /** Why search cannot be used through this reader, or null when its index is open. */
  searchUnavailable(): string | null {
    return this.index.isOpen ? null : this.searchProblem();
  }

  private searchProblem(): string {
    const why = this.index.problem ?? "is missing or damaged";
    return `full-text search is unavailable: the index ${this.location.searchPath} ${why}; transcripts are not affected, and a running gateway rebuilds the index by itself`;
  }

  close(): void {
    this.index.close();
    this.db.close();
  }
}
