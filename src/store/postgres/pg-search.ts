// Full-text search of messages in PostgreSQL: the same query language as SQLite's (each word or
// quoted phrase must match; toFtsQuery), matched against the messages' generated tsvector through
// its GIN index, best matches first. The index is part of the row, so nothing is ever pending.
import { UsageError } from "../../core/errors.js";
import { toMessageView } from "../rows.js";
import { phrasesOf, snippet, toFtsQuery } from "../search-index.js";
import type { SearchResult } from "../store-reader.js";
import type { Query } from "./pg-reads.js";
import { SEARCH_CONFIG } from "./pg-schema.js";

/** The phrases of a query as SQLite's search reads them (each one must match). */
function phrases(query: string): string[] {
  const expression = toFtsQuery(query);
  if (expression === null) throw new UsageError("the search query has no words to look for");
  return phrasesOf(expression);
}

export async function searchMessages(
  q: Query,
  query: string,
  options: { limit?: number } = {},
): Promise<SearchResult> {
  const terms = phrases(query);
  const tsquery = terms.map((_, i) => `phraseto_tsquery('${SEARCH_CONFIG}', $${i + 1})`).join(" && ");
  const limit = options.limit ?? 20;
  const rows = await q(
    `SELECT id, uid, session_id, seq, role, content, content_kind, tool_calls, tool_call_id, name, turn_id,
            created_at, ts_rank_cd(search_vector, query)::float8 AS rank
       FROM messages, (SELECT ${tsquery} AS query) q
      WHERE search_vector @@ query
      ORDER BY rank DESC, id DESC LIMIT $${terms.length + 1}`,
    [...terms, limit],
  );
  const hits = rows.map((row) => {
    const message = toMessageView(row);
    return {
      message,
      session_id: message.session_id,
      snippet: snippet(message.content ?? "", terms),
      // Lower is better in SQLite's (bm25) ranks: the same sign here.
      rank: -Number(row.rank),
    };
  });
  return { query, order: "relevance", hits, pending: 0 };
}
