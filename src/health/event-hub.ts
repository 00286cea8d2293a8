// The gateway's feed of status events (retry, key rotation, fallback, compression, shutdown,
// resume, store faults): numbered in order, the last few hundred kept in memory, so a client of
// GET /api/events that reconnects with Last-Event-ID gets what it missed while the ring holds it.
import type { ServerResponse } from "node:http";
import { Redactor } from "../core/redact.js";

export interface FeedEvent {
  /** 1, 2, 3… in the order published, for this gateway process. */
  id: number;
  at: number;
  type: string;
  /** The layer that caught or reported it, when it has one. */
  layer: string | null;
  session_id: string | null;
  message: string;
  data: Record<string, unknown>;
}

export interface PublishInput {
  type: string;
  layer?: string | null;
  session_id?: string | null;
  message?: string;
  data?: Record<string, unknown>;
}

type Subscriber = (event: FeedEvent) => void;

export class EventHub {
  private readonly ring: FeedEvent[] = [];
  private readonly subscribers = new Set<Subscriber>();
  private readonly counts = new Map<string, number>();
  private nextId = 1;
  private streams = 0;

  constructor(
    private readonly capacity = 500,
    private readonly now: () => number = Date.now,
    /** The profile's secrets: no event leaves with one (the feed, the log, the dashboard). */
    private readonly redactor: Redactor = Redactor.none,
  ) {}

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
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    // Send the headers now: with nothing held yet, a client would otherwise wait for the first
    // keep-alive (15 s) to learn that the stream is open.
    res.flushHeaders();
    const write = (event: FeedEvent) => {
      if (res.writableEnded || res.destroyed) return;
      res.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    };
    const oldest = this.oldestId;
    if (lastId !== null && oldest !== null && lastId + 1 < oldest)
      res.write(
        `: events ${lastId + 1} to ${oldest - 1} are no longer held (only the last ${this.capacity} are)\n\n`,
      );
    for (const event of this.since(lastId)) write(event);
    const unsubscribe = this.subscribe(write);
    this.streams++;
    const keepAlive = setInterval(() => {
      if (!res.writableEnded && !res.destroyed) res.write(": keep-alive\n\n");
    }, keepAliveMs);
    keepAlive.unref();
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      this.streams--;
      unsubscribe();
      clearInterval(keepAlive);
      closing.removeEventListener("abort", end);
      if (!res.writableEnded) res.end();
    };
    res.on("close", end);
    if (closing.aborted) end();
    else closing.addEventListener("abort", end, { once: true });
  }
}

/** Parse a Last-Event-ID header (or query value): a whole number, or null when absent or not one. */
export function parseLastEventId(value: string | string[] | null | undefined): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === null || !/^\d{1,15}$/.test(v.trim())) return null;
  return Number(v.trim());
}
