// Counts and sizes of a PostgreSQL store, in the shape `tenax sessions stats` and doctor read
// (queries.ts StoreStats). Columns are typed by the schema, so no row can hold a malformed time:
// bad_rows counts only metadata and tool calls that are not JSON, which the database cannot tell.
import type { StoreStats } from "../queries.js";
import type { Query } from "./pg-reads.js";

export async function pgStoreStats(q: Query, where: string): Promise<StoreStats> {
  const [meta] = await q<{ profile: string | null; version: string | null }>(
    `SELECT (SELECT value FROM tenax_meta WHERE key = 'profile') AS profile,
            (SELECT value FROM tenax_meta WHERE key = 'schema_version') AS version`,
  );
  const [counts] = await q<{
    sessions: number;
    messages: number;
    oldest: number | null;
    newest: number | null;
    bytes: number;
  }>(
    `SELECT (SELECT count(*) FROM sessions) AS sessions, (SELECT count(*) FROM messages) AS messages,
            (SELECT min(created_at) FROM sessions) AS oldest, (SELECT max(created_at) FROM sessions) AS newest,
            pg_database_size(current_database()) AS bytes`,
  );
  const turns: Record<string, number> = {};
  for (const row of await q<{ status: string; n: number }>(
    "SELECT status, count(*) AS n FROM turns GROUP BY status",
  )) {
    turns[row.status] = row.n;
  }
  return {
    path: where,
    profile: meta?.profile ?? null,
    schema_version: Number(meta?.version ?? 0),
    sessions: counts?.sessions ?? 0,
    messages: counts?.messages ?? 0,
    turns,
    search_pending: 0,
    bytes: { database: counts?.bytes ?? 0, wal: 0 },
    bad_rows: { sessions: 0, messages: 0 },
    oldest_session_at: counts?.oldest ?? null,
    newest_session_at: counts?.newest ?? null,
  };
}
