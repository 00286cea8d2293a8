// The gateway's status events (GET /api/events, SSE), followed by the dashboard server for as long
// as the gateway says it serves them, with the dashboard's own (logins, refused credentials): the last
// few hundred are kept so a page that opens late still sees the recent ones, and a dropped feed
// resumes with Last-Event-ID.

export interface FeedEvent {
  /** The dashboard's own running number, which the page asks "after". */
  seq: number;
  /** The gateway's SSE id, when it sent one. */
  id: string | null;
  /** When the gateway published it (its `at`), else when it arrived here. */
  received_at: number;
  type: string;
  layer: string | null;
  message: string | null;
  data: Record<string, unknown>;
}

/** Capability names under which a gateway may announce its event feed. */
export const EVENTS_CAPABILITIES = ["events", "api.events"] as const;

export interface EventFeedOptions {
  url: () => string;
  headers: () => Record<string, string>;
  keep?: number;
  fetch?: typeof fetch;
  now?: () => number;
}

export class EventFeed {
  private readonly events: FeedEvent[] = [];
  private seq = 0;
  private lastId: string | null = null;
  private controller: AbortController | null = null;
  private problem: string | null = null;

  constructor(private readonly options: EventFeedOptions) {}

  /** Follow the feed while `wanted`; called after every probe. */
  want(wanted: boolean): void {
    if (wanted && this.controller === null) this.follow();
    if (!wanted) {
      this.stop();
      // The gateway went away or stopped serving events: a new process numbers its events anew.
      this.lastId = null;
    }
  }

  get following(): boolean {
    return this.controller !== null;
  }

  /** The last connection problem, for the page; null while the feed flows. */
  get error(): string | null {
    return this.problem;
  }

  after(seq: number): FeedEvent[] {
    return this.events.filter((e) => e.seq > seq);
  }

  /** An event of this process itself (a login, a refused one), listed among the gateway's. */
  local(event: { type: string; layer: string; message: string; at: number }): void {
    this.push({
      seq: ++this.seq,
      id: null,
      received_at: event.at,
      type: event.type,
      layer: event.layer,
      message: event.message,
      data: { ...event },
    });
  }

  stop(): void {
    this.controller?.abort();
    this.controller = null;
  }

  private follow(): void {
    const controller = new AbortController();
    this.controller = controller;
    void this.read(controller.signal).finally(() => {
      if (this.controller === controller) this.controller = null;
    });
  }

  private async read(signal: AbortSignal): Promise<void> {
    const doFetch = this.options.fetch ?? globalThis.fetch;
    try {
      const res = await doFetch(`${this.options.url()}/api/events`, {
        headers: {
          accept: "text/event-stream",
          ...this.options.headers(),
          ...(this.lastId === null ? {} : { "last-event-id": this.lastId }),
        },
        signal,
      });
      if (!res.ok || res.body === null) {
        this.problem = `GET /api/events answered ${res.status}`;
        await res.body?.cancel();
        return;
      }
      this.problem = null;
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of res.body) {
        buffer += decoder.decode(chunk as Uint8Array, { stream: true });
        let end = buffer.search(/\r?\n\r?\n/);
        while (end >= 0) {
          this.take(buffer.slice(0, end));
          buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
          end = buffer.search(/\r?\n\r?\n/);
        }
      }
      this.problem = "the gateway closed the event feed";
    } catch (error) {
      if (!signal.aborted) this.problem = `the event feed failed: ${(error as Error).message}`;
    }
  }

  /** One SSE block: `id:` and `data:` lines (a comment or a keep-alive has neither). */
  private take(block: string): void {
    let id: string | null = null;
    const data: string[] = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("id:")) id = line.slice(3).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (id !== null) this.lastId = id;
    if (data.length === 0) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.join("\n"));
    } catch {
      parsed = { type: "unparsed", message: data.join("\n") };
    }
    const body = (typeof parsed === "object" && parsed !== null ? parsed : { value: parsed }) as Record<
      string,
      unknown
    >;
    this.push({
      seq: ++this.seq,
      id,
      received_at: typeof body.at === "number" ? body.at : (this.options.now ?? Date.now)(),
      type: typeof body.type === "string" ? body.type : "event",
      layer: typeof body.layer === "string" ? body.layer : null,
      message: typeof body.message === "string" ? body.message : null,
      data: body,
    });
  }

  private push(event: FeedEvent): void {
    this.events.push(event);
    const keep = this.options.keep ?? 300;
    if (this.events.length > keep) this.events.splice(0, this.events.length - keep);
  }
}
