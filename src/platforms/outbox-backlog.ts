// What waits in the platform outbox, per platform, for /health and `tenax status`: read from the
// store, so it counts every process's entries, not only this one's.
import type { StoreReads } from "../store/port.js";
import { OUTBOX_KIND, parseEntry } from "./outbox-records.js";

export interface PlatformBacklog {
  pending: number;
  given_up: number;
  /** When the oldest pending entry was enqueued, or null. */
  oldest_pending_at: number | null;
  /** How long it has waited at `now` (ms), or null. */
  oldest_pending_age_ms: number | null;
  /** The newest error of an entry not delivered, or null. */
  last_error: string | null;
}

const empty = (): PlatformBacklog => ({
  pending: 0,
  given_up: 0,
  oldest_pending_at: null,
  oldest_pending_age_ms: null,
  last_error: null,
});

/**
 * Each platform's backlog; `platforms` are listed even with nothing queued. `delivered` holds keys
 * this process delivered but could not mark yet: they are not counted as waiting.
 */
export async function readBacklog(
  store: Pick<StoreReads, "listRecords">,
  platforms: readonly string[] = [],
  delivered: ReadonlySet<string> = new Set(),
  now: number = Date.now(),
): Promise<Record<string, PlatformBacklog>> {
  const out: Record<string, PlatformBacklog> = {};
  for (const p of platforms) out[p] = empty();
  const errorAt: Record<string, number> = {};
  for (const row of await store.listRecords(OUTBOX_KIND)) {
    const e = parseEntry(row.value);
    if (e === null || e.state === "delivered" || delivered.has(e.key)) continue;
    const b = out[e.platform] ?? empty();
    out[e.platform] = b;
    if (e.state === "pending") {
      b.pending++;
      if (b.oldest_pending_at === null || e.created_at < b.oldest_pending_at)
        b.oldest_pending_at = e.created_at;
    } else b.given_up++;
    if (e.last_error !== null && row.updated_at >= (errorAt[e.platform] ?? Number.NEGATIVE_INFINITY)) {
      errorAt[e.platform] = row.updated_at;
      b.last_error = e.last_error;
    }
  }
  for (const b of Object.values(out))
    if (b.oldest_pending_at !== null) b.oldest_pending_age_ms = Math.max(0, now - b.oldest_pending_at);
  return out;
}
