// What waits in the outbox, per channel, for /health, `tenax status` and /metrics: read from the
// store, so it counts every process's entries, not only this one's.
import type { StoreReads } from "../store/port.js";
import { OUTBOX_KIND, parseEntry } from "./entry.js";

export interface OutboxBacklog {
  pending: number;
  given_up: number;
  /** When the oldest pending entry was enqueued, or null. */
  oldest_pending_at: number | null;
  /** How long it has waited at `now` (ms), or null. */
  oldest_pending_age_ms: number | null;
  /** The newest error of an entry not delivered, or null. */
  last_error: string | null;
}

export const emptyBacklog = (): OutboxBacklog => ({
  pending: 0,
  given_up: 0,
  oldest_pending_at: null,
  oldest_pending_age_ms: null,
  last_error: null,
});

/**
 * Each channel's backlog; `channels` are listed even with nothing queued. `delivered` holds keys
 * this process delivered but could not mark yet: they are not counted as waiting.
 */
export async function readOutboxBacklog(
  store: Pick<StoreReads, "listRecords">,
  channels: readonly string[] = [],
  delivered: ReadonlySet<string> = new Set(),
  now: number = Date.now(),
): Promise<Record<string, OutboxBacklog>> {
  const out: Record<string, OutboxBacklog> = {};
  for (const c of channels) out[c] = emptyBacklog();
  const errorAt: Record<string, number> = {};
  for (const row of await store.listRecords(OUTBOX_KIND)) {
    const e = parseEntry(row.value);
    if (e === null || e.state === "delivered" || delivered.has(e.key)) continue;
    const b = out[e.channel] ?? emptyBacklog();
    out[e.channel] = b;
    if (e.state === "pending") {
      b.pending++;
      if (b.oldest_pending_at === null || e.created_at < b.oldest_pending_at)
        b.oldest_pending_at = e.created_at;
    } else b.given_up++;
    if (e.last_error !== null && row.updated_at >= (errorAt[e.channel] ?? Number.NEGATIVE_INFINITY)) {
      errorAt[e.channel] = row.updated_at;
      b.last_error = e.last_error;
    }
  }
  for (const b of Object.values(out))
    if (b.oldest_pending_at !== null) b.oldest_pending_age_ms = Math.max(0, now - b.oldest_pending_at);
  return out;
}
