// The durable audit trail: every status event of every process that runs turns (the gateway,
// `tenax chat`, `tenax cron tick`/`run`) as one JSON line in the profile's logs/events.jsonl, so
// the morning after, `tenax events` answers "was it still retrying, or had it given up, and why".
// It takes events as feed lines (event-feed.ts), by their type and layer alone: an event added to
// the union is recorded with no change here. The fields people filter on are lifted to the top of
// the line from wherever the event keeps them; the rest stays under `data`.
import { join } from "node:path";
import { AppendLog } from "../core/append-log.js";
import type { Redactor } from "../core/redact.js";
import type { ProfilePaths } from "../profile/paths.js";
import { type FeedInput, feedOfMcpEvent, feedOfStoreEvent, feedOfTurnEvent } from "./event-feed.js";
import type { AgentEvent, McpEvent, StoreEvent, TenaxEventType } from "./events.js";

/** The trail's file in a profile; rotated ones are NAME.1 (newest) … NAME.keep. */
export function auditFile(paths: ProfilePaths): string {
  return join(paths.logs, "events.jsonl");
}

/** Which process wrote a line. */
export type AuditSource = "gateway" | "chat" | "cron" | "dashboard";

/**
 * Events left out of the trail, each with why; every other event with a feed line is written.
 * Adding one is one line.
 */
export const NOT_AUDITED: Partial<Record<TenaxEventType, string>> = {
  turn_started: "its end (turn_finished) says all a start would, and whether it went well",
};

/** The fields of a line, lifted from the event: the first path the event has wins. */
const LIFTED = {
  turn_id: [["turn_id"]],
  // A fallback's `from` is the model that failed; an auxiliary task's `candidate` the one it tried;
  // a finished turn's `failure.target` the model whose call gave up last.
  provider: [
    ["provider"],
    ["from", "provider"],
    ["candidate", "provider"],
    ["failure", "target", "provider"],
  ],
  model: [["model"], ["from", "model"], ["candidate", "model"], ["failure", "target", "model"]],
  reason: [["reason"], ["why"], ["failure", "code"]],
  attempt: [["attempt"]],
  max_attempts: [["max_attempts"]],
  delay_ms: [["delay_ms"], ["next_in_ms"]],
  elapsed_ms: [["elapsed_ms"], ["waited_ms"], ["duration_ms"]],
  context_tokens: [["context_tokens"], ["tokens_before"], ["needed_tokens"]],
} as const satisfies Record<string, ReadonlyArray<readonly string[]>>;

export type LiftedField = keyof typeof LIFTED;
export const LIFTED_FIELDS = Object.keys(LIFTED) as LiftedField[];

export interface AuditRecord {
  /** ISO 8601, UTC. */
  time: string;
  layer: string;
  type: string;
  session_id: string | null;
  turn_id?: string;
  provider?: string;
  model?: string;
  reason?: string;
  attempt?: number;
  max_attempts?: number;
  delay_ms?: number;
  elapsed_ms?: number;
  context_tokens?: number;
  /** For people: what happened and why. */
  message: string;
  source: AuditSource;
  pid: number;
  /** The event's other fields. */
  data: Record<string, unknown>;
}

/** Strings longer than this are cut (a provider's whole error page is not an audit line). */
const MAX_STRING = 2_000;

/** A feed line to write; its type is any string (a published feed event's is). */
export type AuditInput = Omit<FeedInput, "type"> & { type: string };

/** The line for an event, or null when it is not audited. */
export function auditRecord(input: AuditInput, at: number, source: AuditSource): AuditRecord | null {
  if ((NOT_AUDITED as Record<string, string | undefined>)[input.type] !== undefined) return null;
  const data: Record<string, unknown> = { ...input.data };
  const sessionId = input.session_id ?? (typeof data.session_id === "string" ? data.session_id : null);
  for (const key of ["type", "layer", "message", "session_id"]) delete data[key];
  // In this order, so a line reads left to right as `tenax events` prints it.
  const record: Record<string, unknown> = {
    time: new Date(at).toISOString(),
    layer: input.layer ?? "agent",
    type: input.type,
    session_id: sessionId,
  };
  for (const field of LIFTED_FIELDS) {
    const value = firstOf(data, LIFTED[field]);
    if (value === undefined) continue;
    record[field] = value;
    // A top-level field lifted as it is lives once, at the top.
    const [first] = LIFTED[field];
    if (first?.length === 1 && data[first[0] as string] === value) delete data[first[0] as string];
  }
  record.message = bounded(input.message ?? input.type);
  record.source = source;
  record.pid = process.pid;
  record.data = bounded(data);
  return record as unknown as AuditRecord;
}

function firstOf(data: Record<string, unknown>, paths: ReadonlyArray<readonly string[]>): unknown {
  for (const path of paths) {
    let value: unknown = data;
    for (const key of path)
      value =
        value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
    if (typeof value === "string" || (typeof value === "number" && Number.isFinite(value))) return value;
  }
  return undefined;
}

function bounded(value: unknown, depth = 0): unknown {
  if (typeof value === "string")
    return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}… (${value.length} characters)` : value;
  if (value === null || typeof value !== "object") return value;
  if (depth > 6) return "…";
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => bounded(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, bounded(v, depth + 1)]));
}

export interface AuditTrailOptions {
  source: AuditSource;
  maxBytes: number;
  keep: number;
  redactor?: Redactor;
  /** Told once when the file cannot be written: a warning for the log or the terminal. */
  onFailure?: (message: string) => void;
  now?: () => number;
}

/** One process's writer of the trail. Never throws, never waits: a line is one synchronous append. */
export class AuditTrail {
  private readonly log: AppendLog;
  private readonly now: () => number;
  /** The turn each session runs now, from its turn_started to its turn_finished. */
  private readonly running = new Map<string, string>();
  /** Running turns that have a line: only their end, or an end that went wrong, is written. */
  private readonly told = new Set<string>();

  constructor(
    readonly file: string,
    private readonly options: AuditTrailOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.log = new AppendLog(file, {
      maxBytes: options.maxBytes,
      keep: options.keep,
      ...(options.redactor ? { redactor: options.redactor } : {}),
      ...(options.onFailure
        ? {
            onFailure: (message: string) =>
              options.onFailure?.(`the audit trail cannot be written: ${message}`),
          }
        : {}),
      now: this.now,
    });
  }

  /** Why the last line could not be written; null when it was. */
  get failed(): string | null {
    return this.log.failed;
  }

  /**
   * Write the line of an event (at `at`, epoch ms, by default now). An event of a session whose
   * turn is running, that does not name the turn itself (a retry, a key's cooldown), is given
   * the turn's id: a session runs one turn at a time.
   */
  record(input: AuditInput, at = this.now()): void {
    try {
      const sessionId = input.session_id ?? null;
      const turnId = typeof input.data?.turn_id === "string" ? input.data.turn_id : null;
      if (sessionId !== null && turnId !== null && input.type === "turn_started")
        this.running.set(sessionId, turnId);
      const running = sessionId === null ? undefined : this.running.get(sessionId);
      // The turn the line is of: its own, or the one its session runs now.
      const id = turnId ?? running;
      if (input.type === "turn_finished") {
        if (sessionId !== null) this.running.delete(sessionId);
        // A turn that went well with nothing on the way (no retry, no fallback, ...) is no audit's
        // business: a busy gateway's trail keeps its trouble, not a line for every quiet turn. Its
        // line is not even shaped.
        const quiet = input.data?.status === "completed" && (id === undefined || !this.told.has(id));
        if (id !== undefined) this.told.delete(id);
        if (quiet) return;
      }
      const record = auditRecord(
        turnId === null && running !== undefined
          ? { ...input, data: { ...input.data, turn_id: running } }
          : input,
        at,
        this.options.source,
      );
      if (record === null) return;
      if (input.type !== "turn_finished" && record.turn_id !== undefined) this.told.add(record.turn_id);
      this.log.append(record);
    } catch {
      // An event that cannot be shaped (a cycle in its data) is lost, never the turn it reports on.
    }
  }

  turnEvent(sessionId: string, event: AgentEvent): void {
    const input = feedOfTurnEvent(sessionId, event);
    if (input) this.record(input);
  }

  storeEvent(event: StoreEvent): void {
    const input = feedOfStoreEvent(event);
    if (input) this.record(input);
  }

  mcpEvent(event: McpEvent): void {
    this.record(feedOfMcpEvent(event));
  }
}

/** The profile's trail, rotated like its log (config `logs.max_mb`, `logs.keep`). */
export function openAuditTrail(
  paths: ProfilePaths,
  logs: { max_mb: number; keep: number },
  options: Omit<AuditTrailOptions, "maxBytes" | "keep">,
): AuditTrail {
  return new AuditTrail(auditFile(paths), {
    ...options,
    maxBytes: Math.round(logs.max_mb * 1024 * 1024),
    keep: logs.keep,
  });
}
