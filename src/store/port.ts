// The store port: the one interface through which the rest of Tenax reads and writes a profile's
// sessions, messages, turns, runs, records, responses and key ledger, whatever engine holds them.
// Two adapters implement it: SQLite (store.ts, the embedded default: one file per profile) and
// PostgreSQL (postgres/, for profiles that outgrow one machine). The contract both keep is tested
// once, against both, in test/store-contract.test.ts.
//
// The promises every adapter keeps:
// - A write's promise resolves only once its transaction is committed and durable; nothing is
//   acknowledged before that. A write the engine cannot take is refused with a StoreError saying
//   which layer failed (and spooled when the engine is down, so nothing acknowledged is lost).
// - Operations (ops.ts) are idempotent: a session or turn by its id, a message by its uid, a record
//   by its newest updated_at. A write whose outcome is unknown (a lost reply to a commit) is safe
//   to send again.
// - `record.claim` and message sequence numbers are atomic under any number of writers.
// - A turn's own writes are fenced by its lease epoch (lease-fence.ts): a write holding an epoch
//   that is not the turn's current one is refused whole with `lease_lost` and told as a `lease_lost`
//   event; a takeover (status and epoch compared and set) has exactly one winner.
// - Every read is async: an engine across the network cannot answer on the caller's stack.
import type { CredentialState, CredentialStateStore } from "./credential-ledger.js";
import type { InstanceStore, InstanceView } from "./instance-types.js";
import type { AppliedMessage, ApplyOptions, OpResult, ResponsePutOp, TurnUpdateOp, WriteOp } from "./ops.js";
import type { ListOptions, RecordView, StoreStats } from "./queries.js";
import type { ResponseView } from "./response-rows.js";
import type { MessageView, SessionView, TurnView } from "./rows.js";
import type { SpoolRecord } from "./spool.js";
import type { BegunTurn, StagedWrite, TurnStart } from "./store-domain.js";
import type { SearchResult } from "./store-reader.js";

export type { SearchResult, SearchResultItem } from "./store-reader.js";

import type { NewMessage, NewSession, StoreEvent, StoreHealth } from "./store-types.js";

export type StoreEngineName = "sqlite" | "postgres";

/** What any view of a store can read: the writer's, and a read-only reader's. */
export interface StoreReads {
  readonly engine: StoreEngineName;
  /** Where the store lives, safe to print: a file path, or a URL without its password. */
  readonly where: string;

  getSession(id: string): Promise<SessionView | null>;
  listSessions(options?: ListOptions): Promise<SessionView[]>;
  /** A full session id from an id or a unique prefix of one; a UsageError otherwise. */
  resolveSessionId(idOrPrefix: string): Promise<string>;
  getMessages(sessionId: string): Promise<MessageView[]>;
  getTurns(sessionId: string): Promise<TurnView[]>;
  /** Turns still marked running (alive, or left behind by a process that died), oldest first. */
  runningTurns(): Promise<TurnView[]>;
  /** Turns marked interrupted that `owner` (a lease owner) ran, started at or after `since`. */
  interruptedTurnsOf(owner: string, since: number): Promise<TurnView[]>;
  /** The newest session whose conversation fingerprint is `hash`, or null. */
  findConversation(hash: string): Promise<string | null>;
  /** A session's conversation fingerprint; null when it has none (or there is no such session). */
  conversationHash(sessionId: string): Promise<string | null>;

  /** One durable record's value (parsed JSON), or null when there is none (or it was deleted). */
  getRecord<T = unknown>(kind: string, key: string): Promise<T | null>;
  /** One record's JSON text as stored (what a record.claim's `expect` compares with), or null. */
  getRecordText(kind: string, key: string): Promise<string | null>;
  /** Every live record of a kind, oldest update first; optionally only one session's. */
  listRecords<T = unknown>(kind: string, options?: { sessionId?: string }): Promise<RecordView<T>[]>;
  /** A stamp of a kind's records that changes whenever one of them is written or deleted. */
  recordStamp(kind: string): Promise<string>;
  /** Each live record of a kind's version by key (changes when it is rewritten), values unread. */
  recordVersions(kind: string): Promise<Map<string, string>>;

  /** A stored Responses API answer, or null when there is none. */
  getResponse(id: string): Promise<ResponseView | null>;
  /** The newest stored response with an output item of this id, or null. */
  responseWithItem(itemId: string): Promise<ResponseView | null>;
  /** The newest response stored for a session. */
  latestResponseId(sessionId: string): Promise<string | null>;

  /** The shared key ledger's rows: which keys are cooling or disabled, by fingerprint. */
  credentialStates(): Promise<CredentialState[]>;
  /** The profile's processes as the instance registry last wrote them (instances.ts), oldest first. */
  listInstances(): Promise<InstanceView[]>;
  /** Full-text search over every message; a SearchUnavailableError says why it cannot. */
  search(query: string, options?: { limit?: number }): Promise<SearchResult>;
  /** Counts and sizes, for `tenax sessions stats` and doctor. */
  stats(): Promise<StoreStats>;
}

/** The writable store of a profile: what every layer above the store imports. */
export interface StorePort extends StoreReads {
  /**
   * A store several processes share (PostgreSQL): wake the processes listening on `channel` (a
   * hint that something was written, never data), and hear such wake-ups. Absent on SQLite, where
   * one gateway runs a profile.
   */
  notify?(channel: string, payload: string): Promise<void>;
  listen?(channel: string, handler: (payload: string) => void): () => void;
  write(ops: WriteOp[], options?: ApplyOptions): Promise<OpResult[]>;
  writeStaged(ops: WriteOp[], options?: ApplyOptions): StagedWrite;
  /**
   * Resolves once every write committed so far is durable: what a write made with
   * `durableWithNext` waits on when nothing else is left to commit (a model call that failed).
   */
  durableSoFar(): Promise<void>;

  createSession(input?: NewSession): Promise<string>;
  sessionOp(input?: NewSession): { id: string; op: WriteOp };
  messageOp(input: NewMessage): WriteOp;
  appendMessage(input: NewMessage): Promise<AppliedMessage>;
  appendMessages(inputs: NewMessage[]): Promise<AppliedMessage[]>;
  putRecord(
    kind: string,
    key: string,
    value: unknown,
    options?: { sessionId?: string | null },
  ): Promise<void>;
  startTurn(
    sessionId: string,
    leaseMs: number,
    owner?: string,
    question?: Omit<NewMessage, "session_id" | "turn_id">,
    before?: readonly WriteOp[],
  ): Promise<string>;
  beginTurn(start: TurnStart): BegunTurn;
  updateTurn(op: Omit<TurnUpdateOp, "op">): Promise<void>;
  putResponse(row: Omit<ResponsePutOp, "op">): Promise<void>;
  deleteResponse(id: string): Promise<boolean>;
  deleteSession(id: string): Promise<number>;
  /** Delete sessions idle since before the cutoff; sessions with a running turn are kept. */
  pruneSessions(cutoffMs: number, dryRun?: boolean): Promise<string[]>;
  /** Fold spooled writes into this store; already present messages (same uid) are skipped. */
  replay(records: SpoolRecord[]): Promise<{ ops: number; messages: number; duplicates: number }>;

  /** The key ledger shared by every process of the profile. */
  credentials(): CredentialStateStore;
  /**
   * The instance registry's rows and the engine's way of telling a live instance: its pid on this
   * host (SQLite) or its advisory lock (PostgreSQL). Written directly, never as operations: a
   * heartbeat spooled and replayed later would say a process lived when it did not.
   */
  instances(): InstanceStore;
  on(listener: (event: StoreEvent) => void): () => void;
  /**
   * The store's health as last seen: synchronous by contract (health is read on every request and
   * by listeners), so an adapter answers from state it keeps current, never by asking the engine.
   */
  health(): StoreHealth;
  close(): void;
}
