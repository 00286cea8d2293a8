// The chat platforms' outbox entries in the store's records table:
//   platform_outbox  key CHAT_KEY/ID   one outbound message (a send or an edit), pending, then
//                                      delivered (with the platform's message id) or given up
// CHAT_KEY is chatKey (PLATFORM:CHAT, percent-encoded parts), so one chat's entries share a key
// prefix; `order` sorts them in the order they were enqueued, which is the order they are sent.
import { z } from "zod";
import { newId } from "../core/ids.js";
import type { RecordPutOp } from "../store/ops.js";
import type { StoreReads } from "../store/port.js";
import { putOp } from "../store/record-ops.js";
import type { ChatRef, EditOp, SendOp } from "./adapter.js";
import { chatKey } from "./session-key.js";

export const OUTBOX_KIND = "platform_outbox";

const chat = z.object({ platform: z.string(), chat_id: z.string(), thread_id: z.string().nullable() });
const buttons = z.array(z.array(z.object({ text: z.string(), data: z.string() })));
const format = z.enum(["plain", "markdown"]);

const sendOp = z.object({
  type: z.literal("send"),
  chat,
  text: z.string(),
  format,
  buttons: buttons.optional(),
  reply_to: z.string().optional(),
});

/**
 * An edit names the message by its platform id, or by the outbox key of the send that made it
 * (`of_key`, an earlier entry to the same chat): sent in order, that send is delivered first and
 * its message id is looked up when the edit goes out.
 */
const editOp = z.object({
  type: z.literal("edit"),
  chat,
  message_id: z.string().nullable(),
  of_key: z.string().nullable(),
  text: z.string(),
  format,
  buttons: buttons.optional(),
});

export const outboxOp = z.discriminatedUnion("type", [sendOp, editOp]);
export type OutboxOp = z.infer<typeof outboxOp>;
export type OutboxEdit = z.infer<typeof editOp>;

// Not strict: a record written by a newer Tenax with more fields still reads.
export const outboxEntry = z.object({
  key: z.string(),
  platform: z.string(),
  /** chatKey of the op's chat: entries with the same one are sent strictly in order. */
  chat_key: z.string(),
  op: outboxOp,
  /** Sorts one chat's entries in enqueue order: the time, a counter, the id. */
  order: z.string(),
  /** What made it, for people: `turn:ID`, `cron:RUN_KEY`, `notice:shutdown`; or null. */
  origin: z.string().nullable(),
  state: z.enum(["pending", "delivered", "given_up"]),
  attempts: z.number().int().min(0),
  /** When it may be tried next; while an attempt is under way, when its lease ends. */
  next_at: z.number(),
  /** True while an attempt holds the entry (next_at is then the lease's end); absent in older records. */
  leased: z.boolean().optional(),
  /** The process holding the lease (ownerOf); a lease whose process has ended is over. */
  leased_by: z.string().optional(),
  /** True when next_at is a wait the platform asked for (Telegram's retry_after): wake keeps it. */
  asked_wait: z.boolean().optional(),
  last_error: z.string().nullable(),
  created_at: z.number(),
  delivered_at: z.number().nullable(),
  /** The platform's id of the message sent (or edited), once delivered. */
  message_id: z.string().nullable(),
});
export type OutboxEntry = z.infer<typeof outboxEntry>;

/** What to enqueue: a send, or an edit of a message by its id or by the send's outbox key. */
export type OutboxMessage =
  | SendOp
  | (Omit<EditOp, "message_id"> & { message_id: string; of_key?: undefined })
  | (Omit<EditOp, "message_id"> & { message_id?: undefined; of_key: string });

export interface EnqueueInput {
  message: OutboxMessage;
  /**
   * The entry's id within its chat, unique per message: a turn's `TURN_ID/reply/0` makes a repeat
   * of the same enqueue recognisable. Default: a new id.
   */
  id?: string;
  origin?: string;
}

type Source = Pick<StoreReads, "listRecords" | "getRecord">;

let counter = 0;

function stored(message: OutboxMessage): OutboxOp {
  if (message.type === "send") return message;
  const { message_id, of_key, ...rest } = message;
  return { ...rest, message_id: message_id ?? null, of_key: of_key ?? null };
}

/** The entry's key: its chat, then its id. */
export function outboxKey(chatRef: Pick<ChatRef, "platform" | "chat_id">, id: string): string {
  return `${chatKey(chatRef)}/${id}`;
}

/**
 * A new pending entry and the put that writes it, for a caller to commit with whatever produced
 * the message (one transaction: the message exists exactly when what made it does).
 */
export function outboxEntryOp(input: EnqueueInput, now: number): { entry: OutboxEntry; op: RecordPutOp } {
  const id = input.id ?? newId("out_", now);
  const chatRef = input.message.chat;
  counter = (counter + 1) % 1_000_000;
  const entry: OutboxEntry = {
    key: outboxKey(chatRef, id),
    platform: chatRef.platform,
    chat_key: chatKey(chatRef),
    op: stored(input.message),
    order: `${String(Math.max(0, Math.floor(now))).padStart(15, "0")}-${String(counter).padStart(6, "0")}-${id}`,
    origin: input.origin ?? null,
    state: "pending",
    attempts: 0,
    next_at: now,
    last_error: null,
    created_at: now,
    delivered_at: null,
    message_id: null,
  };
  return { entry, op: putOp(OUTBOX_KIND, entry.key, entry, now) };
}

export function parseEntry(value: unknown): OutboxEntry | null {
  const parsed = outboxEntry.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/** Every entry that reads (one that fails its schema is left alone, as absent). */
export async function listOutboxEntries(store: Source): Promise<OutboxEntry[]> {
  return (await store.listRecords(OUTBOX_KIND)).flatMap((row) => {
    const entry = parseEntry(row.value);
    return entry === null ? [] : [entry];
  });
}

export const readOutboxEntry = async (store: Source, key: string): Promise<OutboxEntry | null> =>
  parseEntry(await store.getRecord(OUTBOX_KIND, key));

/** The deletions of delivered and given-up entries last written more than `olderThanMs` ago. */
export async function pruneOps(
  store: Pick<StoreReads, "listRecords">,
  olderThanMs: number,
  now: number,
): Promise<RecordPutOp[]> {
  return (await store.listRecords(OUTBOX_KIND)).flatMap((row) => {
    const e = parseEntry(row.value);
    if (e === null || e.state === "pending" || row.updated_at > now - olderThanMs) return [];
    return [putOp(OUTBOX_KIND, row.key, null, Math.max(now, row.updated_at))];
  });
}
