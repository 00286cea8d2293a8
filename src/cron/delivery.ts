// Cron's results and notices in the outbox (src/outbox): the engine writes a run's entries in
// the same transaction as the run's end (outboxOps), and the `cron` channel sends them to the
// job's target (a local file, or a webhook); a chat target is an entry of that platform's
// channel instead. The outbox leases, retries and marks them; this file says what an entry holds,
// how one attempt goes, and what cron's events say.

import { stepBackoff } from "../core/backoff.js";
import type { OutboxChannel, OutboxReport } from "../outbox/channel.js";
import { listEntries, newEntry, type OutboxEntry } from "../outbox/entry.js";
import type { ChatRef } from "../platforms/adapter.js";
import { outboxEntryOp } from "../platforms/outbox-records.js";
import type { RecordPutOp } from "../store/ops.js";
import type { StoreReads } from "../store/port.js";
import { type CronPayload, cronPayload, deliveryKey, sendEntry } from "./delivery-send.js";
import type { CronEvent } from "./host.js";
import type { Notice } from "./notices.js";
import { type JobRecord, OUTBOX_KIND as LEGACY_KIND, legacyOutboxRecord, type RunRecord } from "./records.js";

export const CRON_CHANNEL = "cron";

const SECOND = 1_000;
const HOUR = 3_600 * SECOND;
const BACKOFF = {
  stepsMs: [5, 15, 60, 300, 900, 3_600, 7_200, 14_400].map((s) => s * SECOND),
  capMs: 6 * HOUR,
  spread: 0.2,
};

const EVENT_TYPES = {
  delivered: "cron_delivered",
  failed: "cron_delivery_failed",
  given_up: "cron_delivery_given_up",
} as const;

/** 5 s, 15 s, 1 min, 5 min, 15 min, 1 h, 2 h, 4 h, then 6 h, each within ±20 %. */
export function defaultBackoff(attempt: number, random: () => number = Math.random): number {
  return stepBackoff(BACKOFF, attempt, random);
}

const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());

/**
 * The outbox entries a run's end writes with it: its result (unless it was skipped or its reply
 * was [SILENT]) and the notice, if the streak gave one. They go to the job's current target
 * (the run's, if the job was removed), each as an entry of its own.
 */
export function outboxOps(
  run: RunRecord,
  job: JobRecord | null,
  notice: Notice | null,
  now: number,
): RecordPutOp[] {
  const target = job?.deliver ?? run.deliver;
  const entry = (what: CronPayload["what"], body: unknown): RecordPutOp => {
    const payload: CronPayload = {
      run_key: run.run_key,
      job: run.job,
      what,
      target,
      body: JSON.stringify(body),
    };
    return newEntry(
      { channel: CRON_CHANNEL, id: cronEntryKey(payload), payload, origin: `cron:${run.run_key}` },
      now,
    ).op;
  };
  const ops: RecordPutOp[] = [];
  const ended = run.state === "ok" || run.state === "failed" || run.state === "interrupted";
  const chat = chatTarget(target);
  if (chat !== null) {
    // A chat target goes through the chat platforms' outbox, in this same transaction.
    if (ended && !run.silent) ops.push(chatEntry(chat, run, "result", runText(run), now));
    if (notice !== null) ops.push(chatEntry(chat, run, notice.kind, notice.text, now));
    return ops;
  }
  if (ended && !run.silent)
    ops.push(
      entry("result", {
        type: "cron.run",
        job: run.job,
        run_key: run.run_key,
        run_id: run.run_id,
        occurrence: iso(run.occurrence),
        state: run.state,
        missed: run.missed,
        reply: run.reply,
        error: run.error,
        started_at: iso(run.started_at),
        ended_at: iso(run.ended_at),
        session_id: run.session_id,
      }),
    );
  if (notice !== null)
    ops.push(
      entry(notice.kind, {
        type: "cron.notice",
        kind: notice.kind,
        job: run.job,
        run_key: run.run_key,
        text: notice.text,
        streak: notice.streak,
      }),
    );
  return ops;
}

/** A `telegram:CHAT_ID` target as the chat it names; null for local and webhook targets. */
export function chatTarget(target: string): ChatRef | null {
  const match = /^telegram:(-?\d+)$/.exec(target);
  return match?.[1] === undefined ? null : { platform: "telegram", chat_id: match[1], thread_id: null };
}

function chatEntry(chat: ChatRef, run: RunRecord, what: string, text: string, now: number): RecordPutOp {
  return outboxEntryOp(
    {
      message: { type: "send", chat, text, format: "markdown" },
      id: `cron_${run.run_key}/${what}`.replace(/[^A-Za-z0-9_./-]/g, "_"),
      origin: `cron:${run.run_key}`,
    },
    now,
  ).op;
}

/** A run's result as a chat message: the job, then the reply, or what went wrong. */
function runText(run: RunRecord): string {
  const head = `**${run.job}**${run.missed ? " (a catch-up run for a missed time)" : ""}`;
  if (run.state === "ok") return `${head}\n\n${run.reply}`;
  return `${head} ${run.state === "interrupted" ? "was interrupted" : "failed"}: ${run.error ?? "no reason recorded"}${run.reply ? `\n\n${run.reply}` : ""}`;
}

/** A cron entry's key in the outbox: the channel, then the run's key and what it is. */
export const cronEntryKey = (p: Pick<CronPayload, "run_key" | "what">): string => `cron:${deliveryKey(p)}`;

/** One cron delivery as health and the CLI show it: the entry's state with what it carries. */
export type CronDelivery = Omit<OutboxEntry<CronPayload>, "payload"> & CronPayload;

/** Every cron entry of the outbox (chat targets are their platform's, not listed here). */
export async function listOutbox(store: Pick<StoreReads, "listRecords">): Promise<CronDelivery[]> {
  return (await listEntries(store, CRON_CHANNEL)).flatMap(({ payload, ...entry }) => {
    const parsed = cronPayload.safeParse(payload);
    return parsed.success ? [{ ...entry, ...parsed.data }] : [];
  });
}

export interface CronChannelOptions {
  /** The profile's cron/output folder: local deliveries go under it, one folder per job. */
  outputDir: string;
  fetchImpl?: typeof fetch;
  onEvent?: (event: CronEvent) => void;
  random?: () => number;
  /** One webhook attempt's limit (ms); default 10 s. */
  timeoutMs?: number;
  /** Attempts before an entry is given up; default 12. */
  maxAttempts?: number;
  /** The wait after the Nth failed attempt (ms). */
  backoff?: (attempt: number) => number;
  /** Delivered and given-up entries are pruned this long after (ms); default 30 days. */
  retainMs?: number;
}

/** Cron's channel of the outbox: a result or notice to its job's local folder or webhook. */
export function cronChannel(options: CronChannelOptions): OutboxChannel<CronPayload> {
  const random = options.random ?? Math.random;
  const fetchImpl = options.fetchImpl ?? fetch;
  const describe = (e: OutboxEntry<CronPayload>) =>
    `${e.payload.job}: ${e.payload.what === "result" ? `the result of ${e.payload.run_key}` : `the "${e.payload.what}" notice of ${e.payload.run_key}`}`;
  return {
    name: CRON_CHANNEL,
    policy: {
      timeoutMs: options.timeoutMs ?? 10 * SECOND,
      maxAttempts: options.maxAttempts ?? 12,
      maxAgeMs: Number.POSITIVE_INFINITY,
      backoff: options.backoff ?? ((attempt) => defaultBackoff(attempt, random)),
      retainMs: options.retainMs ?? 30 * 24 * HOUR,
    },
    parse: (payload) => {
      const parsed = cronPayload.safeParse(payload);
      return parsed.success ? parsed.data : null;
    },
    send: async (entry, attempt) =>
      await sendEntry(entry.payload, {
        outputDir: options.outputDir,
        fetchImpl,
        timeoutMs: attempt.timeoutMs,
        now: attempt.now,
        signal: attempt.signal,
      }),
    describe,
    report: (report: OutboxReport<CronPayload>) => {
      const { entry } = report;
      const message =
        report.type === "delivered" && entry !== null
          ? `${describe(entry)} delivered to ${entry.receipt ?? entry.payload.target}`
          : report.message;
      options.onEvent?.({
        type: EVENT_TYPES[report.type],
        layer: "cron",
        job: entry?.payload.job ?? "",
        run_key: entry?.payload.run_key ?? null,
        message,
      });
    },
    legacy: {
      kind: LEGACY_KIND,
      adopt: (value) => {
        const parsed = legacyOutboxRecord.safeParse(value);
        if (!parsed.success) return null;
        const { key: _key, run_key, job, what, target, body, leased_by, ...state } = parsed.data;
        const payload: CronPayload = { run_key, job, what, target, body };
        const key = cronEntryKey(payload);
        return {
          ...state,
          ...(leased_by === undefined ? {} : { leased: true, leased_by }),
          key,
          channel: CRON_CHANNEL,
          lane: key,
          order: `${String(Math.max(0, Math.floor(state.created_at))).padStart(15, "0")}-000000-${key}`,
          origin: `cron:${run_key}`,
          payload,
          receipt: null,
        };
      },
    },
  };
}
