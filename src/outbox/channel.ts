// What the outbox sends through: a channel (a chat platform, cron's targets). The engine owns the
// lease-then-mark protocol, the lanes, retries and the backlog; a channel only reads its payload,
// makes one attempt and says how it went, and turns the engine's reports into its layer's events.
import type { OutboxEntry } from "./entry.js";

export interface ChannelPolicy {
  /** One attempt's limit (ms); its lease lasts this plus LEASE_MARGIN_MS. */
  timeoutMs: number;
  /** Attempts before an entry is given up. */
  maxAttempts: number;
  /** An entry still failing this long after it was enqueued is given up (ms); Infinity: never. */
  maxAgeMs: number;
  /** The wait after the Nth failed attempt (ms), when the receiver named none. */
  backoff: (attempt: number) => number;
  /** Delivered and given-up entries are pruned this long after their last write (ms). */
  retainMs: number;
}

/** Whether an entry can be attempted now: yes (with what the attempt needs), not yet, or never. */
export type Readiness = { ready: string | null } | "wait" | { give_up: string };

export type SendOutcome<P> =
  /** `receipt`: the channel's word on it (a message id, where it went); `payload`: as finally sent. */
  | { kind: "delivered"; receipt: string | null; payload?: P }
  /** Worth another try: after `retryAfterMs` when the receiver asked for that wait, else backoff. */
  | { kind: "retry"; error: string; retryAfterMs: number | null; payload?: P }
  | { kind: "give_up"; error: string; payload?: P };

export interface Attempt {
  signal: AbortSignal;
  timeoutMs: number;
  /** When the attempt started (the engine's clock). */
  now: number;
  /** What `ready` said, if the channel has one. */
  prepared: string | null;
}

export interface OutboxReport<P = unknown> {
  type: "delivered" | "failed" | "given_up";
  /** null: the outbox itself failed (it could not read the store), not one entry. */
  entry: OutboxEntry<P> | null;
  message: string;
}

export interface OutboxChannel<P = unknown> {
  readonly name: string;
  readonly policy: ChannelPolicy;
  /** The payload as this channel's type; null when it is not one (the entry is left alone). */
  parse(payload: unknown): P | null;
  /** Before the lease (optional): whether the entry can go now; `lookup` reads another entry. */
  ready?(entry: OutboxEntry<P>, lookup: (key: string) => Promise<OutboxEntry | null>): Promise<Readiness>;
  /** One attempt; never throws (a throw is taken for a retryable failure). */
  send(entry: OutboxEntry<P>, attempt: Attempt): Promise<SendOutcome<P>>;
  /** Names the entry for people, e.g. "the result of nightly/…" or the entry's key. */
  describe(entry: OutboxEntry<P>): string;
  /** Each delivery, failed attempt and give-up, for the channel's layer's events. */
  report(report: OutboxReport<P>): void;
  /** Entries an earlier Tenax wrote for this channel elsewhere: moved into the outbox once. */
  readonly legacy?: LegacyEntries;
}

/** A channel's entries as an earlier Tenax kept them, under a record kind of their own. */
export interface LegacyEntries {
  kind: string;
  /** The earlier record as an entry of this outbox (its state and attempts kept); null: unreadable. */
  adopt(value: unknown): OutboxEntry | null;
}
