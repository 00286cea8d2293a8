// A chat platform as a channel of the outbox (src/outbox): one chat's messages go in order in
// their chat's lane, an edit waits for the send it changes, formatting the platform rejected is
// resent at once as plain text (outbox-send.ts), and a wait the platform asked for (Telegram's
// retry_after) is kept to the letter. The outbox leases, retries and marks; this says how one
// message goes and what the platforms' events say.
import type { PlatformEvent } from "../agent/events.js";
import { stepBackoff } from "../core/backoff.js";
import type { OutboxBacklog } from "../outbox/backlog.js";
import type { OutboxChannel, Readiness } from "../outbox/channel.js";
import type { OutboxEntry } from "../outbox/entry.js";
import type { Outbox } from "../outbox/outbox.js";
import type { PlatformAdapter } from "./adapter.js";
import {
  adoptLegacy,
  type ChatEntry,
  chatEntryInput,
  type EnqueueInput,
  LEGACY_KIND,
  type OutboxOp,
  parseOp,
} from "./outbox-records.js";
import { attempt } from "./outbox-send.js";

const SECOND = 1_000;
const HOUR = 3_600 * SECOND;
/** 1 s, 2 s, 5 s, 10 s, 30 s, 1 min, 2 min, then 5 min, each within ±20 %. */
const BACKOFF = { stepsMs: [1, 2, 5, 10, 30, 60, 120].map((s) => s * SECOND), capMs: 300 * SECOND };

const EVENT_TYPES = {
  delivered: "platform_delivered",
  failed: "platform_delivery_failed",
  given_up: "platform_delivery_given_up",
} as const;

export function defaultPlatformBackoff(attempt: number, random: () => number = Math.random): number {
  return stepBackoff(BACKOFF, attempt, random);
}

export interface PlatformChannelOptions {
  onEvent?: (event: PlatformEvent) => void;
  random?: () => number;
  /** One attempt's limit (ms); default 10 s. */
  timeoutMs?: number;
  /** Attempts before an entry is given up; default 40. */
  maxAttempts?: number;
  /** An entry failing this long after it was enqueued is given up (ms); default 24 h. */
  maxAgeMs?: number;
  /** The wait after the Nth failed attempt (ms), when the platform named none. */
  backoff?: (attempt: number) => number;
  /** Delivered and given-up entries are pruned this long after (ms); default 24 h. */
  retainMs?: number;
}

/** The platform message id an edit changes: known, still to be sent ("wait"), or never sent. */
async function editTarget(
  op: OutboxOp,
  lookup: (key: string) => Promise<OutboxEntry | null>,
): Promise<Readiness> {
  if (op.type !== "edit") return { ready: null };
  if (op.message_id !== null) return { ready: op.message_id };
  const of = op.of_key === null ? null : await lookup(op.of_key);
  if (of === null || of.state === "given_up" || (of.state === "delivered" && of.receipt === null))
    return {
      give_up: `the message to edit (${op.of_key ?? "none named"}) was never delivered; retrying will not fix it`,
    };
  if (of.state === "pending") return "wait";
  return { ready: of.receipt };
}

export function platformChannel(
  adapter: PlatformAdapter,
  options: PlatformChannelOptions = {},
): OutboxChannel<OutboxOp> {
  const random = options.random ?? Math.random;
  return {
    name: adapter.name,
    policy: {
      timeoutMs: options.timeoutMs ?? 10 * SECOND,
      maxAttempts: options.maxAttempts ?? 40,
      maxAgeMs: options.maxAgeMs ?? 24 * HOUR,
      backoff: options.backoff ?? ((n) => defaultPlatformBackoff(n, random)),
      retainMs: options.retainMs ?? 24 * HOUR,
    },
    parse: parseOp,
    ready: async (entry, lookup) => await editTarget(entry.payload, lookup),
    send: async (entry, at) => {
      const outcome = await attempt(adapter, entry.payload, at.prepared, at.signal, entry.key);
      if (outcome.kind === "delivered")
        return { kind: "delivered", receipt: outcome.message_id, payload: outcome.op };
      const { error } = outcome;
      return error.retryable
        ? { kind: "retry", error: error.message, retryAfterMs: error.retry_after_ms, payload: outcome.op }
        : { kind: "give_up", error: `${error.message}; retrying will not fix it`, payload: outcome.op };
    },
    describe: (entry: ChatEntry) => entry.key,
    report: (report) => {
      options.onEvent?.({
        type: EVENT_TYPES[report.type],
        layer: "platforms",
        platform: report.entry?.channel ?? adapter.name,
        chat: report.entry?.lane ?? null,
        key: report.entry?.key ?? null,
        message: report.message,
      });
    },
    legacy: {
      kind: LEGACY_KIND,
      adopt: (value) => {
        const entry = adoptLegacy(value);
        return entry?.channel === adapter.name ? entry : null;
      },
    },
  };
}

/** The outbox as the chat service uses it: chat messages in, each platform's backlog out. */
export interface ChatOutbox {
  enqueue(input: EnqueueInput): Promise<{ key: string; created: boolean }>;
  kick(): Promise<void>;
  backlog(): Promise<Record<string, OutboxBacklog>>;
}

export const chatOutbox = (outbox: Outbox): ChatOutbox => ({
  enqueue: async (input) => await outbox.enqueue(chatEntryInput(input)),
  kick: () => outbox.kick(),
  backlog: async () => await outbox.backlog(),
});
