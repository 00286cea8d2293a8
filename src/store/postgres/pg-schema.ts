// The PostgreSQL store's schema, as forward-only migrations. tenax_meta holds the version reached
// (schema_version), the store's identity (store_id) and the profile it belongs to. The tables
// mirror SQLite's (migrations.ts); times are BIGINT milliseconds since the epoch. Each session
// keeps its next message sequence number (next_seq), so concurrent appends never compute max+1.
// row_no columns give rows an insertion order, the tiebreak SQLite takes from its rowid.
import { oneRunningTurnSql } from "../one-running-turn.js";

export interface PgMigration {
  version: number;
  description: string;
  sql: string;
}

/** The table every opening reads first, created (under the migration lock) if it is missing. */
export const META_TABLE_SQL = `CREATE TABLE IF NOT EXISTS tenax_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
)`;

export const PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    description: "sessions, messages (full-text searchable), turns, records, responses, credential state",
    sql: `
      CREATE TABLE sessions (
        id                TEXT PRIMARY KEY,
        row_no            BIGINT GENERATED ALWAYS AS IDENTITY,
        title             TEXT,
        source            TEXT NOT NULL DEFAULT 'cli',
        model             TEXT,
        parent_session_id TEXT,
        created_at        BIGINT NOT NULL,
        updated_at        BIGINT NOT NULL,
        metadata          TEXT,
        conversation_hash TEXT,
        next_seq          BIGINT NOT NULL DEFAULT 1
      );
      CREATE INDEX sessions_updated ON sessions (updated_at);
      CREATE INDEX sessions_conversation ON sessions (conversation_hash) WHERE conversation_hash IS NOT NULL;

      CREATE TABLE messages (
        id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        uid           TEXT NOT NULL UNIQUE,
        session_id    TEXT NOT NULL,
        seq           BIGINT NOT NULL,
        role          TEXT NOT NULL,
        content       TEXT,
        content_kind  TEXT NOT NULL DEFAULT 'text',
        tool_calls    TEXT,
        tool_call_id  TEXT,
        name          TEXT,
        turn_id       TEXT,
        created_at    BIGINT NOT NULL,
        -- What search matches: the text content and the tool calls' names and arguments.
        search_text   TEXT NOT NULL DEFAULT '',
        search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED,
        UNIQUE (session_id, seq)
      );
      CREATE INDEX messages_search ON messages USING GIN (search_vector);

      CREATE TABLE turns (
        id               TEXT PRIMARY KEY,
        row_no           BIGINT GENERATED ALWAYS AS IDENTITY,
        session_id       TEXT NOT NULL,
        status           TEXT NOT NULL,
        started_at       BIGINT NOT NULL,
        ended_at         BIGINT,
        lease_owner      TEXT,
        lease_expires_at BIGINT,
        heartbeat_at     BIGINT,
        interrupt_count  INTEGER NOT NULL DEFAULT 0,
        error            TEXT
      );
      CREATE INDEX turns_session ON turns (session_id, started_at);
      CREATE INDEX turns_status ON turns (status);

      -- Last writer wins by updated_at; a NULL value is a tombstone (an older replay cannot revive it).
      CREATE TABLE records (
        kind       TEXT NOT NULL,
        key        TEXT NOT NULL,
        session_id TEXT,
        value      TEXT,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (kind, key)
      );
      CREATE INDEX records_session ON records (session_id) WHERE session_id IS NOT NULL;

      CREATE TABLE responses (
        id                   TEXT PRIMARY KEY,
        row_no               BIGINT GENERATED ALWAYS AS IDENTITY,
        session_id           TEXT,
        model                TEXT NOT NULL,
        status               TEXT NOT NULL,
        previous_response_id TEXT,
        input                TEXT NOT NULL,
        output               TEXT NOT NULL,
        response             TEXT NOT NULL,
        created_at           BIGINT NOT NULL
      );
      CREATE INDEX responses_session ON responses (session_id) WHERE session_id IS NOT NULL;

      -- Provider keys by fingerprint only, never the key itself.
      CREATE TABLE credential_state (
        provider       TEXT NOT NULL,
        fingerprint    TEXT NOT NULL,
        status         TEXT NOT NULL CHECK (status IN ('ok', 'cooling', 'disabled')),
        reason         TEXT,
        cooldown_until BIGINT,
        failures       INTEGER NOT NULL DEFAULT 0,
        updated_at     BIGINT NOT NULL,
        PRIMARY KEY (provider, fingerprint)
      );
    `,
  },
  {
    version: 2,
    description:
      "the registry of the profile's running processes (instances.ts): who is alive, on which host",
    sql: `
      -- One row per process of the profile that ever started (until housekeeping deletes it).
      -- heartbeat_at and stopped_at are the database's clock, the one every host shares; whether
      -- the process still runs is its session advisory lock (pg-instance-lock.ts), not this row.
      CREATE TABLE instances (
        id           TEXT PRIMARY KEY,
        host         TEXT NOT NULL,
        pid          INTEGER NOT NULL,
        started_at   BIGINT NOT NULL,
        heartbeat_at BIGINT NOT NULL,
        stopped_at   BIGINT,
        version      TEXT NOT NULL DEFAULT '',
        meta         TEXT NOT NULL DEFAULT '{}'
      );
    `,
  },
  {
    version: 3,
    description:
      "a lease epoch per turn, so a process that lost a turn's lease cannot write to it (lease-fence.ts)",
    sql: `
      -- 1 when a turn starts, one more at each takeover or interrupt; 0 for turns from before it.
      ALTER TABLE turns ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 4,
    description: "one running turn per session, whichever gateway runs it (one-running-turn.ts)",
    sql: oneRunningTurnSql("row_no"),
  },
];

export const PG_SCHEMA_VERSION = PG_MIGRATIONS[PG_MIGRATIONS.length - 1]?.version ?? 0;

/** The text-search configuration of messages: words as written, case folded, no stemming (as SQLite's). */
export const SEARCH_CONFIG = "simple";
