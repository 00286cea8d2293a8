// Stored Responses API answers as read back from SQLite: one row checked by a schema, its JSON
// columns parsed. A row that does not pass (a damaged file, a hand edit) is reported as such,
// never handed on half-read.
import type Database from "better-sqlite3";
import { z } from "zod";
import { StoreError } from "./errors.js";

export interface ResponseView {
  id: string;
  session_id: string | null;
  model: string;
  status: string;
  previous_response_id: string | null;
  /** The request's input items. */
  input: unknown[];
  /** The output items. */
  output: unknown[];
  /** The rest of the Response object, as answered. */
  response: Record<string, unknown>;
  created_at: number;
}

const jsonOf = <T extends z.ZodType>(schema: T) =>
  z.string().transform((text, ctx): z.infer<T> => {
    try {
      return schema.parse(JSON.parse(text));
    } catch {
      ctx.addIssue({ code: "custom", message: "is not the JSON expected" });
      return z.NEVER;
    }
  });

const rowSchema = z.object({
  id: z.string(),
  session_id: z.string().nullable(),
  model: z.string(),
  status: z.string(),
  previous_response_id: z.string().nullable(),
  input: jsonOf(z.array(z.unknown())),
  output: jsonOf(z.array(z.unknown())),
  response: jsonOf(z.record(z.string(), z.unknown())),
  created_at: z.number().int().nonnegative(),
});

function hasResponses(db: Database.Database): boolean {
  // A store of schema version 3 or older read by a newer reader has no responses table yet.
  return (
    db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'responses'").get() !== undefined
  );
}

/** A stored response row checked and parsed (every engine's rows pass here). */
export function toView(row: unknown, id: string): ResponseView {
  const parsed = rowSchema.safeParse(row);
  if (parsed.success) return parsed.data;
  const where = parsed.error.issues.map((i) => `${i.path.join(".") || "row"} ${i.message}`).join("; ");
  throw new StoreError("store_bad_row", `the stored response ${id} cannot be read: ${where}`, {
    hint: "delete it (DELETE /v1/responses/ID) and send the request again",
  });
}

/** One stored response, or null when there is none. */
export function getResponse(db: Database.Database, id: string): ResponseView | null {
  if (!hasResponses(db)) return null;
  const row = db.prepare("SELECT * FROM responses WHERE id = ?").get(id);
  return row === undefined ? null : toView(row, id);
}

/** The id of the newest response stored for a session, or null. */
export function latestResponseId(db: Database.Database, sessionId: string): string | null {
  if (!hasResponses(db)) return null;
  const id = db
    .prepare("SELECT id FROM responses WHERE session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1")
    .pluck()
    .get(sessionId);
  return typeof id === "string" ? id : null;
}

/**
 * The newest stored response with an output item of this id (what an `item_reference` names), or
 * null. Item ids have no index: the rows are scanned, narrowed by a text match before any JSON is read.
 */
export function responseWithItem(db: Database.Database, itemId: string): ResponseView | null {
  if (!hasResponses(db)) return null;
  const row = db
    .prepare(
      `SELECT * FROM responses
        WHERE instr(output, ?) > 0 AND json_valid(output)
          AND EXISTS (SELECT 1 FROM json_each(responses.output) AS item
                       WHERE json_extract(item.value, '$.id') = ?)
        ORDER BY created_at DESC, rowid DESC LIMIT 1`,
    )
    .get(JSON.stringify(itemId), itemId) as { id?: unknown } | undefined;
  return row === undefined ? null : toView(row, String(row.id));
}
