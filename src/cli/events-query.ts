// What `tenax events` asks of the audit trail: the flags read into a query (each bad value a usage
// error naming the flag and an example), the records that match it, and one line per record for
// people: time, layer, type, session, the key fields, the message.
import type { AuditRecord } from "../agent/audit-trail.js";
import { UsageError } from "../core/errors.js";
import { formatTime } from "./output.js";

export interface EventsFlags {
  since?: string;
  layer?: string;
  session?: string;
  type?: string;
  json?: boolean;
  follow?: boolean;
}

export interface EventsQuery {
  /** Epoch ms: records before it are left out; null for all. */
  since: number | null;
  layers: string[] | null;
  types: string[] | null;
  /** A session id or the start of one. */
  session: string | null;
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: a duration back from `now` (30s, 15m, 1h, 2d) or an ISO time. */
export function parseSince(value: string, now: number): number {
  const text = value.trim();
  const ago = /^(\d{1,9})([smhd])$/.exec(text);
  if (ago) return now - Number(ago[1]) * (UNITS[ago[2] as string] as number);
  if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) {
    const at = Date.parse(text);
    if (!Number.isNaN(at)) return at;
  }
  throw new UsageError(`--since: ${JSON.stringify(value)} is neither a duration nor an ISO time`, {
    hint: "give a duration back from now, for example --since 1h (or 30s, 15m, 2d), or a time, for example --since 2026-12-05T03:00:00Z",
  });
}

/** A comma-separated list flag (`--layer retry,fallback`); an empty one is a usage error. */
function listOf(flag: string, value: string | undefined, example: string): string[] | null {
  if (value === undefined) return null;
  const items = value
    .split(",")
    .map((v) => v.trim())
    .filter((v) => v !== "");
  if (items.length === 0)
    throw new UsageError(`${flag}: expected a value, got ${JSON.stringify(value)}`, {
      hint: `for example ${flag} ${example}`,
    });
  return items;
}

export function parseEventsFlags(flags: EventsFlags, now: number): EventsQuery {
  const session = flags.session?.trim();
  if (session === "")
    throw new UsageError("--session: expected a session id (or the start of one)", {
      hint: "for example --session s_01j (tenax sessions list shows the ids)",
    });
  return {
    since: flags.since === undefined ? null : parseSince(flags.since, now),
    layers: listOf("--layer", flags.layer, "retry (or retry,fallback,credentials)"),
    types: listOf("--type", flags.type, "retry_exhausted (or retry,fallback)"),
    session: session ?? null,
  };
}

export function matches(record: AuditRecord, query: EventsQuery): boolean {
  if (query.since !== null && Date.parse(record.time) < query.since) return false;
  if (query.layers !== null && !query.layers.includes(record.layer)) return false;
  if (query.types !== null && !query.types.includes(record.type)) return false;
  if (query.session !== null && !(record.session_id ?? "").startsWith(query.session)) return false;
  return true;
}

/** One line for people. */
export function formatRecord(record: AuditRecord): string {
  const at = Date.parse(record.time);
  const keys: string[] = [];
  if (record.provider !== undefined || record.model !== undefined)
    keys.push([record.provider, record.model].filter((p) => p !== undefined).join("/"));
  if (record.attempt !== undefined)
    keys.push(
      `attempt ${record.attempt}${record.max_attempts !== undefined ? `/${record.max_attempts}` : ""}`,
    );
  if (record.delay_ms !== undefined) keys.push(`delay ${record.delay_ms}ms`);
  if (record.elapsed_ms !== undefined) keys.push(`elapsed ${record.elapsed_ms}ms`);
  if (record.context_tokens !== undefined) keys.push(`ctx ${record.context_tokens}`);
  if (record.reason !== undefined) keys.push(`reason ${record.reason}`);
  const ms = String(new Date(at).getUTCMilliseconds()).padStart(3, "0");
  return [
    `${formatTime(at)}.${ms}`,
    record.layer.padEnd(11),
    record.type.padEnd(20),
    record.session_id ?? "-",
    keys.length > 0 ? `[${keys.join(", ")}]` : "",
    record.message,
  ]
    .filter((part) => part !== "")
    .join("  ");
}
