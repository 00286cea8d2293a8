// Which Tenax session each chat conversation talks to, kept in the store's records table:
//   platform_session  key SESSION_KEY   the session key (session-key.ts) -> the Tenax session, made
//                                       on first use and replaced by /new; while a turn of it runs,
//                                       `running` names the inbox entry it answers and how many
//                                       turns the session had before, so a restart can tell
//                                       whether that turn started, ended, or was resumed; and
//                                       the chat's last error.
import { z } from "zod";
import type { RecordPutOp } from "../store/ops.js";
import type { StoreReads } from "../store/port.js";
import { putOp } from "../store/record-ops.js";

export const SESSION_KIND = "platform_session";

const chat = z.object({ platform: z.string(), chat_id: z.string(), thread_id: z.string().nullable() });

// Not strict: a record written by a newer Tenax with more fields still reads.
export const chatSession = z.object({
  session_key: z.string(),
  platform: z.string(),
  chat_key: z.string(),
  chat,
  session_id: z.string(),
  created_at: z.number(),
  updated_at: z.number(),
  /** The turn under way for a message of this chat, or null. */
  running: z
    .object({
      inbox_key: z.string(),
      /** The session it runs in (the record's session_id may have moved on with /new). */
      session_id: z.string(),
      /** The session's turns before this one started: the turn is the next one after them. */
      turns_before: z.number().int().min(0),
      at: z.number(),
    })
    .nullable(),
  /** The last failure of a turn of this chat, and when, for /status and health; kept until the next. */
  last_error: z.string().nullable(),
  last_error_at: z.number().nullable(),
});
export type ChatSession = z.infer<typeof chatSession>;

type Source = Pick<StoreReads, "getRecord" | "listRecords">;

export async function readChatSession(store: Source, key: string): Promise<ChatSession | null> {
  const parsed = chatSession.safeParse(await store.getRecord(SESSION_KIND, key));
  return parsed.success ? parsed.data : null;
}

export async function listChatSessions(store: Source): Promise<ChatSession[]> {
  return (await store.listRecords(SESSION_KIND)).flatMap((row) => {
    const parsed = chatSession.safeParse(row.value);
    return parsed.success ? [parsed.data] : [];
  });
}

/** The write of a session record; never stamped older than what it replaces. */
export function chatSessionOp(record: ChatSession, now: number): { record: ChatSession; op: RecordPutOp } {
  const at = Math.max(now, record.updated_at);
  const next = { ...record, updated_at: at };
  return { record: next, op: putOp(SESSION_KIND, record.session_key, next, at) };
}
