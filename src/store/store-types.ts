// The writing store's options, events, health and inputs: the vocabulary the layers above use to
// talk to the store, kept apart from the class that implements it.
import type { Deps } from "../core/deps.js";
import type { Redactor } from "../core/redact.js";
import type { IntegrityResult } from "./integrity.js";
import type { Synchronous } from "./open-database.js";
import type { RereadMode } from "./page-reread.js";
import type { StoreLocation } from "./store-reader.js";
import type { WalFiles } from "./wal-sync.js";

export interface StoreOptions extends StoreLocation {
  synchronous?: Synchronous;
  /** How long one attempt waits for the write lock inside SQLite (blocks the thread). */
  busyTimeoutMs?: number;
  /** How long a write keeps retrying, asleep between attempts, before it gives up. */
  writeRetryBudgetMs?: number;
  /** Budget of the integrity check on open; 0 skips it. */
  integrityCheckTimeoutMs?: number;
  /**
   * With synchronous "full": sync the WAL off the event loop before acknowledging (default true),
   * or let SQLite sync each commit on it (false; for comparison only).
   */
  syncOffLoop?: boolean;
  /**
   * When a write reads the pages it touches from the file again instead of the cache
   * (page-reread.ts): "changed" (the default: when the file changed under the writer, and at
   * least every second), "always" (before every commit), "off" (diagnosis only).
   */
  rereadPagesOnWrite?: RereadMode;
  /** The profile's secrets, redacted from every write before it is stored or spooled. */
  redactor?: Redactor;
  /** The file calls the WAL's syncs make (the real ones unless a test holds a sync back). */
  walFiles?: WalFiles;
  deps?: Partial<Deps>;
}

export type StoreEvent =
  | { type: "store.corrupt"; path: string; detail: string; recover: string }
  | { type: "store.disk_failed"; path: string; detail: string }
  | { type: "store.spooled"; path: string; file: string; reason: string; ops: number }
  | { type: "store.busy_retry"; path: string; attempt: number; waited_ms: number; next_in_ms: number }
  | { type: "store.integrity"; path: string; result: IntegrityResult }
  /** The engine (PostgreSQL) cannot be reached; `path` is where it lives (no password). */
  | { type: "store.unavailable"; path: string; detail: string }
  /** The engine answers again after `down_ms` away. */
  | { type: "store.available"; path: string; down_ms: number }
  | { type: "search.degraded"; path: string; detail: string }
  | { type: "search.rebuilt"; path: string; messages: number; duration_ms: number }
  | { type: "search.resumed"; path: string; indexed: number }
  /**
   * A write fenced off (store/lease-fence.ts): it held an epoch of the turn that is not the current
   * one, because another process took the turn over. One event per refused write: the count of these
   * is tenax_fenced_writes_total.
   */
  /**
   * This process took a turn over (a resume of a turn another process, or this one before a
   * restart, left): its lease epoch moved on. The count of these is tenax_takeovers_total.
   */
  | { type: "turn_takeover"; layer: "store"; path: string; turn_id: string; owner: string | null }
  | {
      type: "lease_lost";
      layer: "store";
      path: string;
      turn_id: string;
      held_epoch: number;
      current_epoch: number;
      message: string;
    };

export interface StoreHealth {
  /** The engine holding the store (port.ts). */
  engine: "sqlite" | "postgres";
  /** Where the store lives: state.db's path, or the database URL without its password. */
  path: string;
  writable: boolean;
  /**
   * The engine cannot be reached (PostgreSQL down or restarting): writes are refused with
   * `store_unavailable` and spooled until it answers again. Always null for SQLite, a local file.
   */
  unavailable: { detail: string; since: number } | null;
  corrupt: { detail: string; since: number; recover: string } | null;
  /** A sync of the WAL failed: nothing more is written (or acknowledged) by this process. */
  disk_failure: { detail: string; since: number } | null;
  integrity: IntegrityResult | null;
  spooled_records: number;
  search: { status: "ok" | "rebuilding" | "degraded" | "paused"; detail: string | null; pending: number };
  /** The key ledger is this process's alone for now, because the store cannot be written. */
  credentials_local: boolean;
}

export interface NewSession {
  id?: string;
  title?: string | null;
  source?: string;
  model?: string | null;
  parent_session_id?: string | null;
  metadata?: Record<string, unknown> | null;
}

export interface NewMessage {
  session_id: string;
  role: string;
  content: string | null | unknown[];
  tool_calls?: unknown[] | null;
  tool_call_id?: string | null;
  name?: string | null;
  turn_id?: string | null;
  uid?: string;
  /** The lease epoch of `turn_id` the writer holds: the running turn's own messages are fenced by it. */
  lease_epoch?: number;
}
