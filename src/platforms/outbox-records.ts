// The chat platforms' entries in the outbox (src/outbox): one outbound message (a send or an edit)
// each, in the channel named after its platform, key CHAT_KEY/ID in lane CHAT_KEY (chatKey:
// PLATFORM:CHAT, percent-encoded parts), so one chat's messages go strictly in the order they were
// enqueued. A delivered entry's receipt is the platform's message id. `platform_outbox` is where an
// earlier Tenax kept them, read once to move them into the outbox (adoptLegacy).
import { z } from "zod";
import { newId } from "../core/ids.js";
import { listEntries, newEntry, type OutboxEntry, outboxEntry, readEntry } from "../outbox/entry.js";
import type { RecordPutOp } from "../store/ops.js";
import type { StoreReads } from "../store/port.js";
import type { ChatRef, EditOp, SendOp } from "./adapter.js";
import { chatKey } from "./session-key.js";

/** Where an earlier Tenax kept the platforms' entries. */
export const LEGACY_KIND = "platform_outbox";

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

/** One chat message of the outbox: its payload is the send or edit. */
export type ChatEntry = OutboxEntry<OutboxOp>;

type Source = Pick<StoreReads, "listRecords" | "getRecord">;

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
export function outboxEntryOp(input: EnqueueInput, now: number): { entry: ChatEntry; op: RecordPutOp } {
  return newEntry(chatEntryInput(input, now), now);
}

/** What the outbox enqueues for a chat message. */
export function chatEntryInput(input: EnqueueInput, now: number = Date.now()) {
  const chatRef = input.message.chat;
  return {
    channel: chatRef.platform,
    lane: chatKey(chatRef),
    id: input.id ?? newId("out_", now),
    payload: stored(input.message),
    origin: input.origin ?? null,
  };
}

export const parseOp = (payload: unknown): OutboxOp | null => {
  const parsed = outboxOp.safeParse(payload);
  return parsed.success ? parsed.data : null;
};

/** One chat entry by its key, or null when there is none (or it is not a chat message). */
export async function readOutboxEntry(store: Source, key: string): Promise<ChatEntry | null> {
  const entry = await readEntry(store, key);
  const op = entry === null ? null : parseOp(entry.payload);
  return entry === null || op === null ? null : { ...entry, payload: op };
}

/** An entry as an earlier Tenax kept it: the platform, chat key, op and message id by those names. */
const legacyEntry = outboxEntry.omit({ channel: true, lane: true, payload: true, receipt: true }).extend({
  platform: z.string(),
  chat_key: z.string(),
  op: outboxOp,
  message_id: z.string().nullable(),
});

/** An entry as an earlier Tenax kept it, as an entry of the outbox; null when it does not read. */
export function adoptLegacy(value: unknown): ChatEntry | null {
  const parsed = legacyEntry.safeParse(value);
  if (!parsed.success) return null;
  const { platform, chat_key, op, message_id, ...rest } = parsed.data;
  return { ...rest, channel: platform, lane: chat_key, payload: op, receipt: message_id };
}

/** Every chat entry of the outbox (one whose payload is no chat message is left out). */
export async function listChatEntries(store: Pick<StoreReads, "listRecords">): Promise<ChatEntry[]> {
  return (await listEntries(store)).flatMap((entry) => {
    const op = parseOp(entry.payload);
    return op === null ? [] : [{ ...entry, payload: op }];
  });
}
