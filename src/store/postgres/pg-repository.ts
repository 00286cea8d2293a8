// The PostgreSQL store's repository: the port's reads as queries of its tables (pg-reads.ts,
// pg-responses.ts, pg-search.ts, pg-stats.ts), over a query function the store wraps to tell when
// the database is away. PostgresStore (the engine: pool, transactions, failures) answers its reads
// through it, as SQLite's Store does through SqliteReads.
import { UsageError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { type CredentialState, parseCredentialRow } from "../credential-ledger.js";
import type { InstanceView } from "../instance-types.js";
import type { ListOptions, RecordView, StoreStats } from "../queries.js";
import type { RepositoryReads } from "../read-view.js";
import type { ResponseView } from "../response-rows.js";
import type { MessageView, SessionView, TurnView } from "../rows.js";
import type { SearchResult } from "../store-reader.js";
import { listPgInstances } from "./pg-instances.js";
import * as rows from "./pg-reads.js";
import * as responses from "./pg-responses.js";
import { searchMessages } from "./pg-search.js";
import { pgStoreStats } from "./pg-stats.js";

export class PgReads implements RepositoryReads {
  constructor(
    private readonly q: rows.Query,
    private readonly where: string,
    private readonly profile: string,
  ) {}

  getSession(id: string): Promise<SessionView | null> {
    return rows.getSession(this.q, id);
  }

  listSessions(options?: ListOptions): Promise<SessionView[]> {
    return rows.listSessions(this.q, options);
  }

  async resolveSessionId(idOrPrefix: string): Promise<string> {
    if (await this.getSession(idOrPrefix)) return idOrPrefix;
    const matches = await rows.findSessionIds(this.q, idOrPrefix);
    if (matches.length === 1 && matches[0] !== undefined) return matches[0];
    if (matches.length > 1) {
      throw new UsageError(
        `session id prefix '${idOrPrefix}' matches several sessions: ${matches.join(", ")}`,
        {
          hint: "give more characters of the id",
        },
      );
    }
    throw new UsageError(`no session '${idOrPrefix}' in ${this.where}`, {
      hint: `list the sessions with: ${tenaxCommand(this.profile, ["sessions", "list"])}`,
    });
  }

  getMessages(sessionId: string): Promise<MessageView[]> {
    return rows.getMessages(this.q, sessionId);
  }

  getTurns(sessionId: string): Promise<TurnView[]> {
    return rows.getTurns(this.q, "session_id = $1", [sessionId]);
  }

  runningTurns(): Promise<TurnView[]> {
    return rows.getTurns(this.q, "status = 'running'", []);
  }

  interruptedTurnsOf(owner: string, since: number): Promise<TurnView[]> {
    return rows.getTurns(this.q, "status = 'interrupted' AND lease_owner = $1 AND started_at >= $2", [
      owner,
      since,
    ]);
  }

  async findConversation(hash: string): Promise<string | null> {
    const [row] = await this.q<{ id: string }>(
      "SELECT id FROM sessions WHERE conversation_hash = $1 ORDER BY updated_at DESC, row_no DESC LIMIT 1",
      [hash],
    );
    return row?.id ?? null;
  }

  async conversationHash(sessionId: string): Promise<string | null> {
    const [row] = await this.q<{ hash: string | null }>(
      "SELECT conversation_hash AS hash FROM sessions WHERE id = $1",
      [sessionId],
    );
    return row?.hash ?? null;
  }

  getRecord<T = unknown>(kind: string, key: string): Promise<T | null> {
    return rows.getRecord<T>(this.q, kind, key);
  }

  getRecordText(kind: string, key: string): Promise<string | null> {
    return rows.getRecordText(this.q, kind, key);
  }

  listRecords<T = unknown>(kind: string, options: { sessionId?: string } = {}): Promise<RecordView<T>[]> {
    return rows.listRecords<T>(this.q, kind, options.sessionId);
  }

  recordStamp(kind: string): Promise<string> {
    return rows.recordStamp(this.q, kind);
  }

  recordVersions(kind: string): Promise<Map<string, string>> {
    return rows.recordVersions(this.q, kind);
  }

  getResponse(id: string): Promise<ResponseView | null> {
    return responses.getResponse(this.q, id);
  }

  responseWithItem(itemId: string): Promise<ResponseView | null> {
    return responses.responseWithItem(this.q, itemId);
  }

  latestResponseId(sessionId: string): Promise<string | null> {
    return responses.latestResponseId(this.q, sessionId);
  }

  async credentialStates(): Promise<CredentialState[]> {
    const rows = await this.q(
      'SELECT * FROM credential_state ORDER BY provider COLLATE "C", fingerprint COLLATE "C"',
    );
    return rows.map(parseCredentialRow);
  }

  listInstances(): Promise<InstanceView[]> {
    return listPgInstances(this.q);
  }

  search(query: string, options?: { limit?: number }): Promise<SearchResult> {
    return searchMessages(this.q, query, options);
  }

  stats(): Promise<StoreStats> {
    return pgStoreStats(this.q, this.where);
  }
}
