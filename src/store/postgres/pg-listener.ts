// Wake-ups between processes of a shared store: LISTEN on a connection of its own (a pg.Client,
// never the pool's: a pooled connection is handed to others between queries), NOTIFY through the
// pool. A notification is a hint that something was written, never data: whoever is woken reads
// the store, and also looks on its own now and then, so a notification lost while the connection
// was down (a database restart) costs only that wait. A broken connection is noticed by its
// 'error'/'end' listeners (an unhandled 'error' would end the process) and made again.
import pg from "pg";
import type { Timers } from "../../core/deps.js";

export interface ListenerSettings {
  url: string;
  connectTimeoutMs: number;
  timers: Timers;
  /** How long after a broken connection it is made again (ms). */
  retryMs?: number;
}

type Handler = (payload: string) => void;

export class PgListener {
  private readonly handlers = new Map<string, Set<Handler>>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private retry: unknown = null;
  private closed = false;

  constructor(private readonly settings: ListenerSettings) {}

  /** Hear `channel`'s notifications until the returned function is called. */
  listen(channel: string, handler: Handler): () => void {
    const known = this.handlers.get(channel);
    const set = known ?? new Set<Handler>();
    set.add(handler);
    if (!known) {
      this.handlers.set(channel, set);
      void this.connect().then(() => this.client?.query(`LISTEN ${ident(channel)}`).catch(() => {}));
    }
    return () => {
      set.delete(handler);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry !== null) this.settings.timers.clear(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private connect(): Promise<void> {
    if (this.client !== null || this.closed) return Promise.resolve();
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.settings.url,
      connectionTimeoutMillis: this.settings.connectTimeoutMs,
      application_name: "tenax-listen",
    });
    const broken = () => {
      if (this.client !== client) return;
      this.client = null;
      this.again();
    };
    client.on("error", broken);
    client.on("end", broken);
    client.on("notification", (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? "");
    });
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${ident(channel)}`);
      if (this.closed) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
    } catch {
      await client.end().catch(() => {});
      this.again();
    }
  }

  private again(): void {
    if (this.closed || this.retry !== null) return;
    this.retry = this.settings.timers.set(() => {
      this.retry = null;
      void this.connect();
    }, this.settings.retryMs ?? 1_000);
  }
}

/** A channel name as an SQL identifier (LISTEN takes no parameter). */
function ident(channel: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
  return channel;
}
