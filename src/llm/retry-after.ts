// How long a provider asked us to wait, read from its headers or its own words. Pure: the caller passes
// `now`, so HTTP dates and RFC 3339 reset times give exact, testable delays; without `now`, absolute
// times are ignored rather than measured against a clock we may not read.

/** Longer waits are clamped: past a day the retry policy moves on anyway, and a key cools for a day at most. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  millisecond: 1,
  milliseconds: 1,
};

/** Never negative (a reset in the past means "now"), never above a day, never NaN. */
export function clampDelay(ms: number | null): number | null {
  if (ms === null || !Number.isFinite(ms)) return null;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.ceil(ms)));
}

/** A Go-style duration as OpenAI sends it ("6m0s", "1.5s", "20ms", "1h2m3s"), or bare seconds ("3"). */
export function parseDuration(text: string): number | null {
  const value = text.trim();
  if (/^\d+(?:\.\d+)?$/.test(value)) return Number(value) * 1000;
  const part = /(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/y;
  let total = 0;
  let index = 0;
  while (index < value.length) {
    part.lastIndex = index;
    const match = part.exec(value);
    if (!match) return null;
    total += Number(match[1]) * (UNIT_MS[match[2] ?? ""] ?? Number.NaN);
    index = part.lastIndex;
  }
  return index === 0 ? null : total;
}

/** `retry-after`: delta seconds, or an HTTP date measured against `now`. */
function parseRetryAfter(value: string, now: number | undefined): number | null {
  const trimmed = value.trim();
  if (/^-?\d+(?:\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) || now === undefined ? null : at - now;
}

/** A bare `x-ratelimit-reset` is ambiguous across vendors: epoch ms, epoch seconds, or delta seconds. */
function parseGenericReset(value: string, now: number | undefined): number | null {
  const n = Number(value.trim());
  if (value.trim() === "" || !Number.isFinite(n)) return null;
  if (n > 1e9 && now === undefined) return null;
  if (n > 1e12) return n - (now ?? 0);
  if (n > 1e9) return n * 1000 - (now ?? 0);
  return n * 1000;
}

interface ResetWindow {
  reset: string;
  remaining: string;
  parse: (value: string, now: number | undefined) => number | null;
}

const rfc3339 = (value: string, now: number | undefined): number | null => {
  const at = Date.parse(value.trim());
  return Number.isNaN(at) || now === undefined ? null : at - now;
};

const RESET_WINDOWS: readonly ResetWindow[] = [
  { reset: "x-ratelimit-reset-requests", remaining: "x-ratelimit-remaining-requests", parse: parseDuration },
  { reset: "x-ratelimit-reset-tokens", remaining: "x-ratelimit-remaining-tokens", parse: parseDuration },
  {
    reset: "anthropic-ratelimit-requests-reset",
    remaining: "anthropic-ratelimit-requests-remaining",
    parse: rfc3339,
  },
  {
    reset: "anthropic-ratelimit-tokens-reset",
    remaining: "anthropic-ratelimit-tokens-remaining",
    parse: rfc3339,
  },
  {
    reset: "anthropic-ratelimit-input-tokens-reset",
    remaining: "anthropic-ratelimit-input-tokens-remaining",
    parse: rfc3339,
  },
  {
    reset: "anthropic-ratelimit-output-tokens-reset",
    remaining: "anthropic-ratelimit-output-tokens-remaining",
    parse: rfc3339,
  },
  { reset: "x-ratelimit-reset", remaining: "x-ratelimit-remaining", parse: parseGenericReset },
];

/**
 * An explicit ask (`retry-after-ms`, then `retry-after`). Applies to any status: a 503 may say it too.
 * Headers must already have lower-case names.
 */
export function explicitRetryAfter(headers: Record<string, string>, now: number | undefined): number | null {
  const ms = headers["retry-after-ms"];
  if (ms !== undefined && /^\s*\d+(?:\.\d+)?\s*$/.test(ms)) return clampDelay(Number(ms));
  const after = headers["retry-after"];
  return after === undefined ? null : clampDelay(parseRetryAfter(after, now));
}

/**
 * When the rate-limit windows reset. These headers ride on every response, so the caller reads them only
 * for a rate limit. The exhausted window (remaining "0") decides; when none says which, the longest reset
 * is the wait that surely clears every window.
 */
export function rateLimitReset(headers: Record<string, string>, now: number | undefined): number | null {
  const all: number[] = [];
  const exhausted: number[] = [];
  for (const window of RESET_WINDOWS) {
    const value = headers[window.reset];
    if (value === undefined) continue;
    const ms = window.parse(value, now);
    if (ms === null || !Number.isFinite(ms)) continue;
    all.push(ms);
    if (headers[window.remaining]?.trim() === "0") exhausted.push(ms);
  }
  const pick = exhausted.length > 0 ? exhausted : all;
  return pick.length === 0 ? null : clampDelay(Math.max(...pick));
}

const SPOKEN_DURATION =
  /(?:try again|retry)(?: (?:in|after))?(?: about)? (\d+(?:\.\d+)?(?:ms|h|m|s)(?:\d+(?:\.\d+)?(?:ms|h|m|s))*)(?![a-z])/;
const SPOKEN_WORDS =
  /(?:try again|retry)(?: (?:in|after))?(?: about)? (\d+(?:\.\d+)?) ?(milliseconds?|seconds?|secs?|minutes?|mins?|hours?)\b/;

/** "Please try again in 20s", "retry after 3 seconds", "Please retry in 1.5s": the provider's words. */
export function spokenRetryAfter(lowerText: string): number | null {
  const compact = SPOKEN_DURATION.exec(lowerText);
  if (compact?.[1] !== undefined) return clampDelay(parseDuration(compact[1]));
  const words = SPOKEN_WORDS.exec(lowerText);
  if (words?.[1] === undefined || words[2] === undefined) return null;
  return clampDelay(Number(words[1]) * (UNIT_MS[words[2]] ?? Number.NaN));
}
