// Read access to a store: what a read-only reader (dashboard, read commands) and the writing store
// have in common. Readers open state.db and search.db read-only and never write a byte.

import type Database from "better-sqlite3";
import { UsageError } from "../core/errors.js";
import { tenaxCommand } from "../profile/command-hint.js";
import { type CredentialState, readCredentialStates } from "./credential-ledger.js";
import { classifySqliteError, SearchUnavailableError } from "./errors.js";
import { corruptStoreError, openDatabase } from "./open-database.js";
import * as q from "./queries.js";
import { getResponse, latestResponseId, type ResponseView, responseWithItem } from "./response-rows.js";
import type { MessageView, SessionView, TurnView } from "./rows.js";
import { SearchIndex, type SearchOrder, toFtsQuery } from "./search-index.js";

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

export abstract class StoreReadView {
  constructor(readonly location: StoreLocation) {}

  protected abstract readDb(): Database.Database;
  protected abstract searchIndex(): SearchIndex | null;
  /** Called before a search: the writer brings the index up to date here. */
  protected prepareSearch(): void {}

  /**
   * Every read goes through here. A read that meets a damaged page becomes the store's typed
   * corruption error (with the salvage command), and the writer stops writing at once: a store
   * must never keep taking writes while its reads fail.
   */
  protected read<T>(query: (db: Database.Database) => T): T {
    try {
      return query(this.readDb());
    } catch (error) {
      if (classifySqliteError(error) !== "corrupt") throw error;
      this.onCorruptRead(error);
      throw corruptStoreError(this.location.path, this.location.profile, error);
    }
  }

  protected onCorruptRead(_error: unknown): void {}

  /** Turns still marked running (alive, or left behind by a process that died). */
  runningTurns(): TurnView[] {
    return this.read((db) => q.runningTurns(db));
  }

  /** Turns marked interrupted that `owner` (a lease owner, "pid:N") ran, started since `since`. */
  interruptedTurnsOf(owner: string, since: number): TurnView[] {
    return this.read((db) => q.interruptedTurnsOf(db, owner, since));
  }

  /** One durable record's value (parsed JSON), or null when there is none (or it was deleted). */
  getRecord<T = unknown>(kind: string, key: string): T | null {
    return this.read((db) => q.getRecord<T>(db, kind, key));
  }

  /** A stamp of a kind's records that changes whenever one of them is written or deleted. */
  recordStamp(kind: string): string {
    return this.read((db) => q.recordStamp(db, kind));
  }

  /** Each live record of a kind's version by key (changes when it is rewritten), values unread. */
  recordVersions(kind: string): Map<string, string> {
    return this.read((db) => q.recordVersions(db, kind));
  }

  /** One record's JSON text as stored (what a record.claim's `expect` compares with), or null. */
  getRecordText(kind: string, key: string): string | null {
    return this.read((db) => q.getRecordText(db, kind, key));
  }

  /** Every live record of a kind, oldest update first; optionally only one session's. */
  listRecords<T = unknown>(kind: string, options: { sessionId?: string } = {}): q.RecordView<T>[] {
    return this.read((db) => q.listRecords<T>(db, kind, options.sessionId));
  }

  /** A stored Responses API answer (POST /v1/responses), or null when there is none. */
  getResponse(id: string): ResponseView | null {
    return this.read((db) => getResponse(db, id));
  }

  /** The newest stored response with an output item of this id (an item_reference's target), or null. */
  responseWithItem(itemId: string): ResponseView | null {
    return this.read((db) => responseWithItem(db, itemId));
  }

  /** The newest response stored for a session: a chain continued from any other forks. */
  latestResponseId(sessionId: string): string | null {
    return this.read((db) => latestResponseId(db, sessionId));
  }

  /** The shared key ledger: which keys are cooling or disabled, by fingerprint. */
  credentialStates(): CredentialState[] {
    return this.read((db) => readCredentialStates(db));
  }

  listSessions(options: q.ListOptions = {}): SessionView[] {
    return this.read((db) => q.listSessions(db, options));
  }

  getSession(id: string): SessionView | null {
    return this.read((db) => q.getSession(db, id));
  }

  getMessages(sessionId: string): MessageView[] {
    return this.read((db) => q.getMessages(db, sessionId));
  }

  getTurns(sessionId: string): TurnView[] {
    return this.read((db) => q.getTurns(db, sessionId));
  }

  stats(): q.StoreStats {
    return this.read((db) => q.storeStats(db, this.location.path));
  }

  /** A full session id from an id or a unique prefix of one; a clear error otherwise. */
  resolveSessionId(idOrPrefix: string): string {
    if (this.getSession(idOrPrefix)) return idOrPrefix;
    const matches = this.read((db) => q.findSessionIds(db, idOrPrefix));
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

  search(query: string, options: { limit?: number } = {}): SearchResult {
    const expression = toFtsQuery(query);
    if (expression === null) throw new UsageError("the search query has no words to look for");
    this.prepareSearch();
    const index = this.searchIndex();
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
      this.onSearchFailure(error);
      throw new SearchUnavailableError(
        "search_degraded",
        `full-text search is degraded: the index ${index.path} failed (${(error as Error).message}); transcripts are not affected`,
        { hint: `rebuild it with: ${this.reindexCommand()}` },
      );
    }
    const messages = this.read((db) =>
      q.getMessagesByIds(
        db,
        hits.map((h) => h.id),
      ),
    );
    const terms = expression.match(/"[^"]*"/g)?.map((t) => t.slice(1, -1)) ?? [];
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
    const pending = this.read(
      (db) => db.prepare("SELECT count(*) FROM search_queue").pluck().get() as number,
    );
    return { query, order, hits: items, pending };
  }

  private reindexCommand(): string {
    return tenaxCommand(this.location.profile, ["sessions", "reindex"]);
  }

  protected searchProblem(): string {
    return `full-text search is unavailable: the index ${this.location.searchPath} is missing or damaged; transcripts are not affected`;
  }

  protected onSearchFailure(_error: unknown): void {}
}

function snippet(text: string, terms: string[], width = 80): string {
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

/** A read-only view of a profile's store, for the dashboard and read commands. */
export class StoreReader extends StoreReadView {
  private readonly db: Database.Database;
  private readonly index: SearchIndex;

  constructor(location: StoreLocation) {
    super(location);
    this.db = openDatabase(location.path, { readonly: true, profile: location.profile });
    const storeId = this.db.prepare("SELECT value FROM meta WHERE key = 'store_id'").pluck().get() as
      | string
      | undefined;
    this.index = new SearchIndex(location.searchPath, storeId ?? "", true);
    if (storeId !== undefined) this.index.open();
  }

  protected readDb(): Database.Database {
    return this.db;
  }

  protected searchIndex(): SearchIndex {
    return this.index;
  }

  /** Why search cannot be used through this reader, or null when its index is open. */
  searchUnavailable(): string | null {
    return this.index.isOpen ? null : this.searchProblem();
  }

  protected override searchProblem(): string {
    const why = this.index.problem ?? "is missing or damaged";
    return `full-text search is unavailable: the index ${this.location.searchPath} ${why}; transcripts are not affected, and a running gateway rebuilds the index by itself`;
  }

  close(): void {
    this.index.close();
    this.db.close();
  }
}
