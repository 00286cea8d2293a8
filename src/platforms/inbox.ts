// Inbound updates are committed here before the platform is told they were received, so a crash
// between the two re-reads the update and runs it once:
//   platform_inbox   key PLATFORM:UPDATE_ID   an update accepted: pending, then done (the session
//                                             and the turn it became)
//   platform_offset  key PLATFORM             where the platform's polling resumes (getUpdates'
//                                             offset), written with the updates it follows
// `accept` inserts an update only if its key is absent (a record.claim on "absent"), so one
// redelivered, or taken by two processes at once, is recognised and not run twice. An update is
// done in the same transaction as what it became (the turn's start, a command's answer queued in
// the outbox): `doneOp` gives that write. `pending()` is what was accepted and not done, oldest
// first: a restart runs it, and a busy session's messages wait there in arrival order.
import { z } from "zod";
import type { Scheduler, Job as SchedulerJob } from "../agent/scheduler.js";
import type { RecordPutOp, WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { claimOp, isRecordConflict, putOp } from "../store/record-ops.js";
import { COMMANDS, type InboundEvent } from "./adapter.js";
import { chatKey, sessionKey } from "./session-key.js";

export const INBOX_KIND = "platform_inbox";
export const OFFSET_KIND = "platform_offset";

const chat = z.object({ platform: z.string(), chat_id: z.string(), thread_id: z.string().nullable() });
const base = {
  update_id: z.string(),
  chat,
  chat_type: z.enum(["private", "group"]),
  user: z.object({ id: z.string(), name: z.string() }),
  at: z.number(),
};
const inboundEvent = z.discriminatedUnion("type", [
  z.object({ ...base, type: z.literal("message"), message_id: z.string(), text: z.string() }),
  z.object({
    ...base,
    type: z.literal("command"),
    message_id: z.string(),
    command: z.enum(COMMANDS),
    args: z.string(),
  }),
  z.object({
    ...base,
    type: z.literal("button"),
    callback_id: z.string(),
    data: z.string(),
    message_id: z.string(),
  }),
]);

// Not strict: a record written by a newer Tenax with more fields still reads.
export const inboxEntry = z.object({
  key: z.string(),
  platform: z.string(),
  update_id: z.string(),
  /** chatKey of the update's chat. */
  chat_key: z.string(),
  /** The session the update belongs to (sessionKey), made once, here. */
  session_key: z.string(),
  event: inboundEvent,
  /** Sorts updates in arrival order: the time accepted, then a counter. */
  order: z.string(),
  state: z.enum(["pending", "done"]),
  accepted_at: z.number(),
  done_at: z.number().nullable(),
  /** What it became: the Tenax session and turn, when it ran one. */
  session_id: z.string().nullable(),
  turn_id: z.string().nullable(),
  /** For people: how it ended without a turn (`/status answered`, `busy: queued`), or null. */
  note: z.string().nullable(),
});
export type InboxEntry = z.infer<typeof inboxEntry>;

const offsetRecord = z.object({ platform: z.string(), offset: z.number(), updated_at: z.number() });

export interface DoneResult {
  session_id: string | null;
  turn_id: string | null;
  note?: string;
}

export interface Accepted {
  /** False: the update was already accepted (a redelivery); do not run it again. */
  created: boolean;
  entry: InboxEntry;
}

/** The key of a platform's update. */
export function inboxKey(platform: string, updateId: string): string {
  return `${encodeURIComponent(platform)}:${encodeURIComponent(updateId)}`;
}

const parse = (value: unknown): InboxEntry | null => {
  const parsed = inboxEntry.safeParse(value);
  return parsed.success ? parsed.data : null;
};

/** The write that marks an update done, for the transaction of what it became. */
export function doneOp(entry: InboxEntry, result: DoneResult, at: number): RecordPutOp {
  const done: InboxEntry = {
    ...entry,
    state: "done",
    done_at: at,
    session_id: result.session_id,
    turn_id: result.turn_id,
    note: result.note ?? null,
  };
  return putOp(INBOX_KIND, entry.key, done, Math.max(at, entry.accepted_at));
}

/** The write of a platform's polling offset (the next update id to ask for). */
export function offsetOp(platform: string, offset: number, at: number): RecordPutOp {
  return putOp(OFFSET_KIND, platform, { platform, offset, updated_at: at }, at);
}

export interface PlatformInboxOptions {
  store: StorePort;
  now?: () => number;
}

export class PlatformInbox {
  private readonly store: StorePort;
  private readonly now: () => number;
  private counter = 0;
  private readonly jobs: SchedulerJob[] = [];

  constructor(options: PlatformInboxOptions) {
    this.store = options.store;
    this.now = options.now ?? Date.now;
  }

  /** Commit an update if it is new; resolves once it is durable (the platform may then be told). */
  async accept(event: InboundEvent): Promise<Accepted> {
    const [one] = await this.acceptAll([event]);
    if (one === undefined) throw new RangeError("acceptAll answered nothing for one update");
    return one;
  }

  /**
   * Commit a batch of updates (one getUpdates answer) in one transaction, with the polling offset
   * that follows them when given: the offset never moves past an update that is not stored.
   */
  async acceptAll(
    events: readonly InboundEvent[],
    offset?: { platform: string; offset: number },
  ): Promise<Accepted[]> {
    const now = this.now();
    const fresh = events.map((event) => this.entry(event, now));
    const results: Accepted[] = [];
    const ops: WriteOp[] = [];
    const seen = new Set<string>();
    for (const entry of fresh) {
      const stored = seen.has(entry.key) ? entry : await this.get(entry.platform, entry.update_id);
      if (stored !== null) {
        results.push({ created: false, entry: stored });
        continue;
      }
      seen.add(entry.key);
      results.push({ created: true, entry });
      ops.push(claimOp(INBOX_KIND, entry.key, entry, null, now));
    }
    if (offset !== undefined) ops.push(offsetOp(offset.platform, offset.offset, now));
    if (ops.length === 0) return results;
    try {
      await this.store.write(ops);
      return results;
    } catch (error) {
      if (!isRecordConflict(error)) throw error;
    }
    // Another process took one of them meanwhile: one at a time, then the offset.
    const one: Accepted[] = [];
    for (const r of results) {
      if (!r.created) {
        one.push(r);
        continue;
      }
      try {
        await this.store.write([claimOp(INBOX_KIND, r.entry.key, r.entry, null, now)]);
        one.push(r);
      } catch (error) {
        if (!isRecordConflict(error)) throw error;
        const stored = await this.get(r.entry.platform, r.entry.update_id);
        one.push({ created: false, entry: stored ?? r.entry });
      }
    }
    if (offset !== undefined) await this.store.write([offsetOp(offset.platform, offset.offset, now)]);
    return one;
  }

  /** Mark an update done on its own (when what it became needs no write of its own). */
  async markDone(entry: InboxEntry, result: DoneResult): Promise<void> {
    await this.store.write([doneOp(entry, result, this.now())]);
  }

  async get(platform: string, updateId: string): Promise<InboxEntry | null> {
    return parse(await this.store.getRecord(INBOX_KIND, inboxKey(platform, updateId)));
  }

  /** What was accepted and is not done, in arrival order (so each chat's in order); one platform's. */
  async pending(platform?: string): Promise<InboxEntry[]> {
    return (await this.all())
      .filter((e) => e.state === "pending" && (platform === undefined || e.platform === platform))
      .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
  }

  /** Where the platform's polling resumes, or null when none was stored. */
  async offset(platform: string): Promise<number | null> {
    const parsed = offsetRecord.safeParse(await this.store.getRecord(OFFSET_KIND, platform));
    return parsed.success ? parsed.data.offset : null;
  }

  /**
   * Delete done updates accepted more than `olderThanMs` ago; how many. Keep them longer than the
   * platform may redeliver an update (Telegram: until the offset moves past it).
   */
  async prune(olderThanMs: number): Promise<number> {
    const now = this.now();
    const ops = (await this.store.listRecords(INBOX_KIND)).flatMap((row) => {
      const e = parse(row.value);
      if (e === null || e.state !== "done" || row.updated_at > now - olderThanMs) return [];
      return [putOp(INBOX_KIND, row.key, null, Math.max(now, row.updated_at))];
    });
    for (let i = 0; i < ops.length; i += 200) await this.store.write(ops.slice(i, i + 200));
    return ops.length;
  }

  /** Prune done updates hourly on the process's scheduler, keeping them `retainMs` (7 days). */
  maintainOn(scheduler: Scheduler, retainMs = 7 * 24 * 3_600_000): void {
    this.jobs.push(scheduler.every("platforms: prune inbox", 3_600_000, () => this.prune(retainMs)));
  }

  stop(): void {
    for (const job of this.jobs.splice(0)) job.cancel();
  }

  private async all(): Promise<InboxEntry[]> {
    return (await this.store.listRecords(INBOX_KIND)).flatMap((row) => {
      const e = parse(row.value);
      return e === null ? [] : [e];
    });
  }

  private entry(event: InboundEvent, now: number): InboxEntry {
    this.counter = (this.counter + 1) % 1_000_000;
    return {
      key: inboxKey(event.chat.platform, event.update_id),
      platform: event.chat.platform,
      update_id: event.update_id,
      chat_key: chatKey(event.chat),
      session_key: sessionKey({ ...event.chat, chat_type: event.chat_type, user_id: event.user.id }),
      event,
      order: `${String(Math.max(0, Math.floor(now))).padStart(15, "0")}-${String(this.counter).padStart(6, "0")}`,
      state: "pending",
      accepted_at: now,
      done_at: null,
      session_id: null,
      turn_id: null,
      note: null,
    };
  }
}
