// The one durable outbox's entries in the store's records table:
//   outbox  key LANE/ID  one thing to send through a channel (a chat message, a cron result),
//                        pending, then delivered (with the channel's receipt) or given up
// A channel is what sends (a chat platform, cron's targets); its payload is the channel's own and
// is read by the channel, never by the engine. Entries with the same lane are sent strictly in
// the order they were enqueued (`order` sorts them); an entry alone in its lane goes on its own.
import { z } from "zod";
import type { RecordPutOp } from "../store/ops.js";
import type { StoreReads } from "../store/port.js";
import { putOp } from "../store/record-ops.js";

export const OUTBOX_KIND = "outbox";

// Not strict: a record written by a newer Tenax with more fields still reads.
export const outboxEntry = z.object({
  key: z.string(),
  /** The channel that sends it: a chat platform's name, or `cron`. */
  channel: z.string(),
  /** Entries with the same lane are sent strictly in order (a chat); an entry's own key otherwise. */
  lane: z.string(),
  /** Sorts one lane's entries in enqueue order: the time, a counter, the id. */
  order: z.string(),
  /** What made it, for people: `turn:ID`, `cron:RUN_KEY`, `notice:shutdown`; or null. */
  origin: z.string().nullable(),
  /** The channel's own description of what to send. */
  payload: z.unknown(),
  state: z.enum(["pending", "delivered", "given_up"]),
  attempts: z.number().int().min(0),
  /** When it may be tried next; while an attempt is under way, when its lease ends. */
  next_at: z.number(),
  /** True while an attempt holds the entry (next_at is then the lease's end). */
  leased: z.boolean().optional(),
  /** Who holds the lease (an owner tag); a lease whose holder has ended is over. */
  leased_by: z.string().optional(),
  /** True when next_at is a wait the receiver asked for (a 429's retry_after): wake keeps it. */
  asked_wait: z.boolean().optional(),
  last_error: z.string().nullable(),
  created_at: z.number(),
  delivered_at: z.number().nullable(),
  /** What the channel said of a delivery: a chat message's id, where a result went; or null. */
  receipt: z.string().nullable(),
});
export type OutboxEntry<P = unknown> = Omit<z.infer<typeof outboxEntry>, "payload"> & { payload: P };

export interface NewEntry<P> {
  channel: string;
  /** The entry's id, unique within its lane: a repeat of the same enqueue is recognisable. */
  id: string;
  /** Default: the entry's own key (no ordering with any other entry). */
  lane?: string;
  payload: P;
  origin?: string | null;
}

type Source = Pick<StoreReads, "listRecords" | "getRecord">;

let counter = 0;

/** The entry's key: its lane (when it shares one), then its id. */
export function entryKey(entry: Pick<NewEntry<unknown>, "id" | "lane">): string {
  return entry.lane === undefined ? entry.id : `${entry.lane}/${entry.id}`;
}

/**
 * A new pending entry and the put that writes it, for a caller to commit with whatever produced
 * it (one transaction: the entry exists exactly when what made it does).
 */
export function newEntry<P>(input: NewEntry<P>, now: number): { entry: OutboxEntry<P>; op: RecordPutOp } {
  const key = entryKey(input);
  counter = (counter + 1) % 1_000_000;
  const entry: OutboxEntry<P> = {
    key,
    channel: input.channel,
    lane: input.lane ?? key,
    order: `${String(Math.max(0, Math.floor(now))).padStart(15, "0")}-${String(counter).padStart(6, "0")}-${input.id}`,
    origin: input.origin ?? null,
    payload: input.payload,
    state: "pending",
    attempts: 0,
    next_at: now,
    last_error: null,
    created_at: now,
    delivered_at: null,
    receipt: null,
  };
  return { entry, op: putOp(OUTBOX_KIND, key, entry, now) };
}

export function parseEntry(value: unknown): OutboxEntry | null {
  const parsed = outboxEntry.safeParse(value);
  return parsed.success ? (parsed.data as OutboxEntry) : null;
}

/** Every entry that reads (one that fails its schema is left alone, as absent); or one channel's. */
export async function listEntries(
  store: Pick<StoreReads, "listRecords">,
  channel?: string,
): Promise<OutboxEntry[]> {
  return (await store.listRecords(OUTBOX_KIND)).flatMap((row) => {
    const entry = parseEntry(row.value);
    return entry === null || (channel !== undefined && entry.channel !== channel) ? [] : [entry];
  });
}

export const readEntry = async (store: Source, key: string): Promise<OutboxEntry | null> =>
  parseEntry(await store.getRecord(OUTBOX_KIND, key));
