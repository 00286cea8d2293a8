// Small facts about Tenax's own outbound HTTP calls (cron's webhooks, the webhook chat platform):
// how a URL is named in messages, and what a Retry-After header asks for.

/** The origin of a URL: its path and query may hold a token, so messages show only this. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "an invalid URL";
  }
}

const MAX_RETRY_AFTER_MS = 6 * 3_600_000;

/** Retry-After as seconds or an HTTP date, in ms from now (at most 6 h); null when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | null {
  if (header === null) return null;
  const text = header.trim();
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text) - now;
  if (!Number.isFinite(ms)) return null;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms));
}
