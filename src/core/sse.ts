// One server-sent-events stream to one client, with a bound on what it may hold unsent. Node's
// `res.write()` never refuses: a client that stops reading makes the process buffer every event
// it is sent, forever. Past the bound the client is dropped (its socket destroyed) and told
// nothing more; a client of a resumable stream comes back with Last-Event-ID for what it missed.
import type { ServerResponse } from "node:http";

/** What one SSE client may hold unsent in this process before it is dropped. */
export const SSE_MAX_BUFFERED_BYTES = 1024 * 1024;

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

/** Clients dropped for not reading, by stream kind, in this process (for /metrics). */
const dropped = new Map<string, number>();

export function droppedSseClients(): { stream: string; count: number }[] {
  return [...dropped].map(([stream, count]) => ({ stream, count }));
}

/** The responses of every open stream, for what they hold unsent (for /metrics). */
const open = new Set<ServerResponse>();

/** How many SSE streams are open now (every kind). */
export function openSseStreams(): number {
  return open.size;
}

/** Bytes this process holds unsent for all its SSE clients together, now. */
export function bufferedSseBytes(): number {
  let total = 0;
  for (const res of open) total += res.writableLength;
  return total;
}

export interface SseOptions {
  /** What the stream is (`events`, `run_events`, `chat`), for the drop counts. */
  kind: string;
  maxBufferedBytes?: number;
}

export class SseStream {
  private wasDropped = false;
  private readonly max: number;

  constructor(
    private readonly res: ServerResponse,
    private readonly options: SseOptions,
  ) {
    this.max = options.maxBufferedBytes ?? SSE_MAX_BUFFERED_BYTES;
  }

  /** Send the status line and headers now, so the client knows at once that the stream is open. */
  open(headers: Record<string, string> = {}): void {
    const res = this.res;
    // A client may have gone before its stream opens (a turn's start waits for its commit): its
    // "close" has fired already, so it is never counted as open.
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    res.flushHeaders();
    open.add(res);
    res.once("close", () => open.delete(res));
  }

  /** Whether the client was dropped for holding more than the bound unsent. */
  get dropped(): boolean {
    return this.wasDropped;
  }

  /** Whether nothing more can be sent (ended, hung up or dropped). */
  get closed(): boolean {
    return this.res.writableEnded || this.res.destroyed;
  }

  /** One event (`id`/`event` lines when given); false when the stream is closed or the client was dropped. */
  event(data: string, fields: { id?: number | string; event?: string } = {}): boolean {
    const id = fields.id === undefined ? "" : `id: ${fields.id}\n`;
    const name = fields.event === undefined ? "" : `event: ${fields.event}\n`;
    return this.write(`${id}${name}data: ${data}\n\n`);
  }

  /** A comment line (keep-alive, or a note for people reading the raw stream). */
  comment(text: string): boolean {
    return this.write(`: ${text}\n\n`);
  }

  /** Raw text in SSE framing already; false when the stream is closed or was just dropped. */
  write(text: string): boolean {
    if (this.closed) return false;
    // Judged on what the client has not taken yet, before this piece: one event larger than the
    // bound still reaches a client that keeps up, so what is held stays under bound + one event.
    const buffered = this.res.writableLength;
    if (buffered <= this.max) {
      this.res.write(text);
      return true;
    }
    this.wasDropped = true;
    // Destroying frees what is buffered; `end()` would keep it until the client read it all.
    this.res.destroy();
    dropped.set(this.options.kind, (dropped.get(this.options.kind) ?? 0) + 1);
    return false;
  }

  /**
   * Resolves once the client has taken what was written past Node's high-water mark (16 KiB):
   * true, or false when the stream closed meanwhile. A backlog (a replay after Last-Event-ID) is
   * sent at the client's pace with this, never holding more than that mark, so a client that
   * reads is never dropped for catching up (the bound is at least 64 KiB); only live events can
   * pass the bound, and only for a client that stopped reading.
   */
  drained(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    if (!this.res.writableNeedDrain) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve(!this.closed);
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
  }

  end(last?: string): void {
    if (this.closed) return;
    if (last !== undefined) this.write(last);
    if (!this.closed) this.res.end();
  }
}
