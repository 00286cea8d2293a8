// Stored Responses API answers read from PostgreSQL, through the same row check as SQLite's
// (response-rows.ts): a row that does not pass is reported as such, never handed on half-read.
import { type ResponseView, toView } from "../response-rows.js";
import type { Query } from "./pg-reads.js";

const COLUMNS = "id, session_id, model, status, previous_response_id, input, output, response, created_at";

export async function getResponse(q: Query, id: string): Promise<ResponseView | null> {
  const [row] = await q(`SELECT ${COLUMNS} FROM responses WHERE id = $1`, [id]);
  return row === undefined ? null : toView(row, id);
}

export async function latestResponseId(q: Query, sessionId: string): Promise<string | null> {
  const [row] = await q<{ id: string }>(
    "SELECT id FROM responses WHERE session_id = $1 ORDER BY created_at DESC, row_no DESC LIMIT 1",
    [sessionId],
  );
  return row?.id ?? null;
}

function hasItem(output: unknown, itemId: string): boolean {
  if (typeof output !== "string") return false;
  try {
    const items: unknown = JSON.parse(output);
    return (
      Array.isArray(items) &&
      items.some(
        (item) => typeof item === "object" && item !== null && (item as { id?: unknown }).id === itemId,
      )
    );
  } catch {
    return false;
  }
}

/**
 * The newest stored response with an output item of this id, or null. Rows are narrowed by a
 * text match in the database; the JSON is read here, so one malformed row never fails the lookup.
 */
export async function responseWithItem(q: Query, itemId: string): Promise<ResponseView | null> {
  const rows = await q(
    `SELECT ${COLUMNS} FROM responses WHERE strpos(output, $1) > 0 ORDER BY created_at DESC, row_no DESC`,
    [JSON.stringify(itemId)],
  );
  const row = rows.find((r) => hasItem(r.output, itemId));
  return row === undefined ? null : toView(row, String(row.id));
}
