// The gateway's feed of status events (retry, key rotation, fallback, compression, shutdown,
// resume, store faults): numbered in order, the last few hundred kept in memory, so a client of
// GET /api/events that reconnects with Last-Event-ID gets what it missed while the ring holds it.
import type { ServerResponse } from "node:http";
import type { FeedInput } from "../agent/event-feed.js";
import { Redactor } from "../core/redact.js";
import { SseStream } from "../core/sse.js";

export interface FeedEvent {
  /** 1, 2, 3… in the order published, for this gateway process. */
  id: number;
  at: number;
  /** A TenaxEventType as published; a reader of the wire takes any string (a newer gateway may add one). */
  type: string;
  /** The layer that caught or reported it, when it has one. */
  layer: string | null;
  session_id: string | null;
  message: string;
  data: Record<string, unknown>;
}

/** What is published: an event as one status line (src/agent/event-feed.ts makes them). */
export type PublishInput = FeedInput;

type Subscriber = (event: FeedEvent) => void;

export class EventHub {
  private readonly ring: FeedEvent[] = [];
  private readonly subscribers = new Set<Subscriber>();
  private readonly counts = new Map<string, number>();
  private nextId = 1;
  private streams = 0;

  private readonly capacity: number;
  private readonly now: () => number;
  /** What one client may hold unsent before it is dropped (SseStream's bound by default). */
  private readonly maxBufferedBytes: number | undefined;
  /** The profile's secrets: no event leaves with one (the feed, the log, the dashboard). */
  private readonly redactor: Redactor;

  constructor(
    options: { capacity?: number; now?: () => number; maxBufferedBytes?: number; redactor?: Redactor } = {},
  ) {
    this.capacity = options.capacity ?? 500;
    this.now = options.now ?? Date.now;
    this.maxBufferedBytes = options.maxBufferedBytes;
    this.redactor = options.redactor ?? Redactor.none;
  }

  publish(input: PublishInput): FeedEvent {
    const event: FeedEvent = {
      id: this.nextId++,
      at: this.now(),
      type: input.type,
      layer: input.layer ?? null,
      session_id: input.session_id ?? null,
      message: this.redactor.redactMessage(input.message ?? input.type),
      data: this.redactor.redactDeep(input.data ?? {}, (text) => this.redactor.redactMessage(text)),
    };
    this.ring.push(event);
    if (this.ring.length > this.capacity) this.ring.shift();
    const key = `${event.layer ?? ""}\u0000${event.type}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    for (const subscriber of this.subscribers) {
      try {
        subscriber(event);
      } catch {
        // One broken client never stops the others.
      }
    }
    return event;
  }

  /** Events after `lastId` still held (all held ones when null), oldest first. */
  since(lastId: number | null): FeedEvent[] {
    return lastId === null ? [...this.ring] : this.ring.filter((e) => e.id > lastId);
  }

  /** The oldest id still held; a client that missed more than the ring learns of the gap. */
  get oldestId(): number | null {
    return this.ring[0]?.id ?? null;
  }

  get lastId(): number {
    return this.nextId - 1;
  }

  /** Events published so far by layer and type (for /metrics). */
  totals(): { layer: string; type: string; count: number }[] {
    return [...this.counts].map(([key, count]) => {
      const [layer = "", type = ""] = key.split("\u0000");
      return { layer, type, count };
    });
  }

  subscribe(subscriber: Subscriber): () => void {
    this.subscribers.add(subscriber);
    return () => this.subscribers.delete(subscriber);
  }

  /** Clients following the feed over HTTP now. */
  get clients(): number {
    return this.streams;
  }

  /**
   * Serve the feed as SSE on `res`: what the ring holds after `lastId`, then live events, with a
   * keep-alive comment so proxies and clients see the stream is alive. Ends when the client goes
   * or `closing` fires.
   */
  serve(res: ServerResponse, lastId: number | null, closing: AbortSignal, keepAliveMs = 15_000): void {
    // A client that stops reading is dropped past the bound, not buffered for: it resumes with
    // Last-Event-ID, and the ring gives it what it missed (or says what it no longer holds).
    const stream = new SseStream(res, {
      kind: "events",
      ...(this.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: this.maxBufferedBytes }),
    });
    stream.open();
    // Ids start again from 1 in each gateway process: an id past the last one published came from
    // an earlier process (the client followed the gateway before it restarted). Taken as it is,
    // it would hide every event until this process passed it; the client gets all held instead.
    const stale = lastId !== null && lastId > this.lastId;
    if (stale)
      stream.comment(
        `event ${lastId} is from an earlier gateway process; this one numbers its events from 1 (all it holds follow)`,
      );
    let sent = stale ? 0 : (lastId ?? 0);
    let live = false;
    const write = (event: FeedEvent) => {
      if (event.id <= sent) return;
      sent = event.id;
      stream.event(JSON.stringify(event), { id: event.id, event: event.type });
    };
    const unsubscribe = this.subscribe((event) => {
      if (live) write(event);
    });
    this.streams++;
    const keepAlive = setInterval(() => stream.comment("keep-alive"), keepAliveMs);
    keepAlive.unref();
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.streams--;
      unsubscribe();
      clearInterval(keepAlive);
      closing.removeEventListener("abort", end);
      stream.end();
    };
    res.on("close", end);
    if (closing.aborted) {
      end();
      return;
    }
    closing.addEventListener("abort", end, { once: true });
    const goLive = () => {
      live = true;
    };
    void this.replay(stream, () => sent, write, goLive).then((caughtUp) => {
      if (!caughtUp) end();
    });
  }

  /**
   * What the ring holds after what was sent, at the client's pace (a replay never passes the
   * bound by itself), until nothing is left; false when the stream closed meanwhile. The look
   * that finds nothing left and `goLive` run in one step, so no event published meanwhile is
   * missed or sent twice.
   */
  private async replay(
    stream: SseStream,
    sent: () => number,
    write: (e: FeedEvent) => void,
    goLive: () => void,
  ): Promise<boolean> {
    for (;;) {
      const from = sent();
      const oldest = this.oldestId;
      if (from > 0 && oldest !== null && from + 1 < oldest)
        stream.comment(
          `events ${from + 1} to ${oldest - 1} are no longer held (only the last ${this.capacity} are)`,
        );
      const pending = this.since(from);
      if (pending.length === 0) {
        if (stream.closed) return false;
        goLive();
        return true;
      }
      for (const event of pending) {
        write(event);
        if (!(await stream.drained())) return false;
      }
    }
  }
}

/** Parse a Last-Event-ID header (or query value): a whole number, or null when absent or not one. */
export function parseLastEventId(value: string | string[] | null | undefined): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === null || !/^\d{1,15}$/.test(v.trim())) return null;
  return Number(v.trim());
}
