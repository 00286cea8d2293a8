// A view whose reads are its repository's. Every engine's store (SQLite's Store, PostgresStore) and
// SQLite's read-only StoreReader keep their queries in a repository object (SqliteReads, PgReads)
// and answer the port's reads through it: the forwarding is written here once.
import type { CredentialState } from "./credential-ledger.js";
import type { InstanceView } from "./instance-types.js";
import type { StoreReads } from "./port.js";
import type { ListOptions, RecordView, StoreStats } from "./queries.js";
import type { ResponseView } from "./response-rows.js";
import type { MessageView, SessionView, TurnView } from "./rows.js";
import type { SearchResult } from "./store-reader.js";

/** The port's reads without the view's own identity (engine, where): what a repository answers. */
export type RepositoryReads = Omit<StoreReads, "engine" | "where">;

export abstract class ReadView implements RepositoryReads {
  protected abstract readonly reads: RepositoryReads;

  getSession(id: string): Promise<SessionView | null> {
    return this.reads.getSession(id);
  }

  listSessions(options?: ListOptions): Promise<SessionView[]> {
    return this.reads.listSessions(options);
  }

  resolveSessionId(idOrPrefix: string): Promise<string> {
    return this.reads.resolveSessionId(idOrPrefix);
  }

  getMessages(sessionId: string): Promise<MessageView[]> {
    return this.reads.getMessages(sessionId);
  }

  getTurns(sessionId: string): Promise<TurnView[]> {
    return this.reads.getTurns(sessionId);
  }

  runningTurns(): Promise<TurnView[]> {
    return this.reads.runningTurns();
  }

  interruptedTurnsOf(owner: string, since: number): Promise<TurnView[]> {
    return this.reads.interruptedTurnsOf(owner, since);
  }

  findConversation(hash: string): Promise<string | null> {
    return this.reads.findConversation(hash);
  }

  conversationHash(sessionId: string): Promise<string | null> {
    return this.reads.conversationHash(sessionId);
  }

  getRecord<T = unknown>(kind: string, key: string): Promise<T | null> {
    return this.reads.getRecord<T>(kind, key);
  }

  getRecordText(kind: string, key: string): Promise<string | null> {
    return this.reads.getRecordText(kind, key);
  }

  listRecords<T = unknown>(kind: string, options?: { sessionId?: string }): Promise<RecordView<T>[]> {
    return this.reads.listRecords<T>(kind, options);
  }

  recordStamp(kind: string): Promise<string> {
    return this.reads.recordStamp(kind);
  }

  recordVersions(kind: string): Promise<Map<string, string>> {
    return this.reads.recordVersions(kind);
  }

  getResponse(id: string): Promise<ResponseView | null> {
    return this.reads.getResponse(id);
  }

  responseWithItem(itemId: string): Promise<ResponseView | null> {
    return this.reads.responseWithItem(itemId);
  }

  latestResponseId(sessionId: string): Promise<string | null> {
    return this.reads.latestResponseId(sessionId);
  }

  credentialStates(): Promise<CredentialState[]> {
    return this.reads.credentialStates();
  }

  listInstances(): Promise<InstanceView[]> {
    return this.reads.listInstances();
  }

  search(query: string, options?: { limit?: number }): Promise<SearchResult> {
    return this.reads.search(query, options);
  }

  stats(): Promise<StoreStats> {
    return this.reads.stats();
  }
}
