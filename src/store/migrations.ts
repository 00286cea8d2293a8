// The store's schema, as forward-only migrations. PRAGMA user_version holds the version reached;
// application_id marks the file as a Tenax store. A store from a newer Tenax is never touched.
import type Database from "better-sqlite3";
import { oneRunningTurnSql } from "./one-running-turn.js";

/** "TNAX" as a big-endian integer; SQLite stores it in the file header. */
export const APPLICATION_ID = 0x544e4158;

export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions, messages, turns, search queue, store identity",
    sql: `
      CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE sessions (
        id                TEXT PRIMARY KEY,
        title             TEXT,
        source            TEXT NOT NULL DEFAULT 'cli',
        model             TEXT,
        parent_session_id TEXT,
        created_at        INTEGER NOT NULL,
        updated_at        INTEGER NOT NULL,
        metadata          TEXT
      );
      CREATE INDEX sessions_updated ON sessions(updated_at);
      CREATE TABLE messages (
        id           INTEGER PRIMARY KEY,
        uid          TEXT NOT NULL UNIQUE,
        session_id   TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        role         TEXT NOT NULL,
        content      TEXT,
        content_kind TEXT NOT NULL DEFAULT 'text',
        tool_calls   TEXT,
        tool_call_id TEXT,
        name         TEXT,
        turn_id      TEXT,
        created_at   INTEGER NOT NULL,
        UNIQUE (session_id, seq)
      );
      CREATE TABLE turns (
        id               TEXT PRIMARY KEY,
        session_id       TEXT NOT NULL,
        status           TEXT NOT NULL,
        started_at       INTEGER NOT NULL,
        ended_at         INTEGER,
        lease_owner      TEXT,
        lease_expires_at INTEGER,
        heartbeat_at     INTEGER,
        interrupt_count  INTEGER NOT NULL DEFAULT 0,
        error            TEXT
      );
      CREATE INDEX turns_session ON turns(session_id, started_at);
      CREATE INDEX turns_status ON turns(status);
      -- Messages waiting to enter (or leave) the full-text index, which lives in its own file:
      -- one entry per message, holding the latest operation on it.
      CREATE TABLE search_queue (
        message_id INTEGER PRIMARY KEY,
        op         TEXT NOT NULL CHECK (op IN ('index', 'delete'))
      );
    `,
  },
  {
    version: 2,
    description: "credential state shared by every process of the profile (key fingerprints only)",
    sql: `
      -- One row per provider key, keyed by a fingerprint of the key, never the key itself.
      CREATE TABLE credential_state (
        provider       TEXT NOT NULL,
        fingerprint    TEXT NOT NULL,
        status         TEXT NOT NULL CHECK (status IN ('ok', 'cooling', 'disabled')),
        reason         TEXT,
        cooldown_until INTEGER,
        failures       INTEGER NOT NULL DEFAULT 0,
        updated_at     INTEGER NOT NULL,
        PRIMARY KEY (provider, fingerprint)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    description:
      "durable records of the agent: memory notes, todo lists, component state (JSON by kind and key)",
    sql: `
      -- Last writer wins by updated_at, so a write replayed from the spool never undoes a newer one.
      -- A NULL value is a tombstone: the record was deleted (kept so an older replay cannot revive it).
      CREATE TABLE records (
        kind       TEXT NOT NULL,
        key        TEXT NOT NULL,
        session_id TEXT,
        value      TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (kind, key)
      ) WITHOUT ROWID;
      CREATE INDEX records_session ON records(session_id) WHERE session_id IS NOT NULL;
    `,
  },
  {
    version: 4,
    description: "stored Responses API answers (POST /v1/responses), chained by previous_response_id",
    sql: `
      -- One row per stored response. input and output are JSON arrays of Responses API items;
      -- response is the rest of the Response object as it was answered. A chain is a session.
      CREATE TABLE responses (
        id                   TEXT PRIMARY KEY,
        session_id           TEXT,
        model                TEXT NOT NULL,
        status               TEXT NOT NULL,
        previous_response_id TEXT,
        input                TEXT NOT NULL,
        output               TEXT NOT NULL,
        response             TEXT NOT NULL,
        created_at           INTEGER NOT NULL
      );
      CREATE INDEX responses_session ON responses(session_id) WHERE session_id IS NOT NULL;
    `,
  },
  {
    version: 5,
    description: "a fingerprint of each gateway session's conversation, so a stateless client continues it",
    sql: `
      -- A hash chain over the session's user and assistant messages as its client sees them (the
      -- question, then the turn's whole reply), set by the gateway after each completed turn.
      ALTER TABLE sessions ADD COLUMN conversation_hash TEXT;
      CREATE INDEX sessions_conversation ON sessions(conversation_hash) WHERE conversation_hash IS NOT NULL;
    `,
  },
  {
    version: 6,
    description: "the registry of the profile's running processes (instances.ts): who is alive, since when",
    sql: `
      -- One row per process of the profile that ever started (until housekeeping deletes it).
      -- Liveness data, never spooled or replayed. WITHOUT ROWID: its rows live in an index b-tree,
      -- so salvage (recover/row-shapes.ts) never takes one for a session, which also has 8 columns.
      CREATE TABLE instances (
        id           TEXT PRIMARY KEY,
        host         TEXT NOT NULL,
        pid          INTEGER NOT NULL,
        started_at   INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL,
        stopped_at   INTEGER,
        version      TEXT NOT NULL DEFAULT '',
        meta         TEXT NOT NULL DEFAULT '{}'
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 7,
    description:
      "a lease epoch per turn, so a process that lost a turn's lease cannot write to it (lease-fence.ts)",
    sql: `
      -- 1 when a turn starts, one more at each takeover or interrupt; 0 for turns from before it.
      -- Readers never need it (READABLE_FROM_VERSION stays 1): a row without it reads as epoch 0.
      -- A turn row now has 11 columns: recovery tells it by that (recover/row-shapes.ts).
      ALTER TABLE turns ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 8,
    description: "one running turn per session, whichever process runs it (one-running-turn.ts)",
    sql: oneRunningTurnSql("rowid"),
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/**
 * The oldest schema that read-only readers can use as it is: everything they read (sessions,
 * messages, turns, search_queue) has been there since version 1, so a reader never waits for a
 * writer to upgrade the file. Raise it when a migration changes what readers read.
 */
export const READABLE_FROM_VERSION = 1;

/**
 * Apply every migration above the file's version, each in its own transaction. The version is
 * read again inside each one (it holds the write lock): processes opening a new store at once
 * (three cron ticks on a fresh profile) each migrate only what no other has migrated meanwhile.
 */
export function migrate(db: Database.Database): { from: number; to: number } {
  const version = () => db.pragma("user_version", { simple: true }) as number;
  const from = version();
  for (const migration of MIGRATIONS) {
    if (migration.version <= from) continue;
    db.transaction(() => {
      if (version() >= migration.version) return;
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
      if (migration.version === 1) db.pragma(`application_id = ${APPLICATION_ID}`);
    }).immediate();
  }
  return { from, to: SCHEMA_VERSION };
}
