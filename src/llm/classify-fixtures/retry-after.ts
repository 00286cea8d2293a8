// Retry-after forms: rows for the classifier's table-driven test.
import { anthropic, at, type FixtureRow, httpDate, openai } from "./shared.js";

export const retryAfterRows: readonly FixtureRow[] = [
  {
    provider: "headers",
    name: "retry-after as an HTTP date",
    failure: { status: 429, headers: { "Retry-After": httpDate(90_000) }, body: null },
    reason: "rate_limit",
    retry_after_ms: 90_000,
  },
  {
    provider: "headers",
    name: "retry-after-ms wins over retry-after",
    failure: { status: 429, headers: { "retry-after-ms": "1500", "retry-after": "10" }, body: null },
    reason: "rate_limit",
    retry_after_ms: 1500,
  },
  {
    provider: "headers",
    name: "an HTTP date in the past means now",
    failure: { status: 429, headers: { "retry-after": httpDate(-30_000) }, body: null },
    reason: "rate_limit",
    retry_after_ms: 0,
  },
  {
    provider: "headers",
    name: "an absurd wait is clamped to a day",
    failure: { status: 429, headers: { "retry-after": "999999999" }, body: null },
    reason: "rate_limit",
    retry_after_ms: 86_400_000,
  },
  {
    provider: "headers",
    name: "an unreadable retry-after is ignored",
    failure: { status: 429, headers: { "retry-after": "soon-ish" }, body: null },
    reason: "rate_limit",
    retry_after_ms: null,
  },
  {
    provider: "headers",
    name: "an HTTP date without a clock is ignored",
    failure: { status: 429, headers: { "retry-after": httpDate(90_000) }, body: null },
    reason: "rate_limit",
    retry_after_ms: null,
    no_clock: true,
  },
  {
    provider: "headers",
    name: "hours, minutes and fractional seconds",
    failure: { status: 429, headers: { "x-ratelimit-reset-requests": "1h2m3.5s" }, body: null },
    reason: "rate_limit",
    retry_after_ms: 3_723_500,
  },
  {
    provider: "headers",
    name: "reset headers on a non-rate-limit error are not a request to wait",
    failure: {
      status: 400,
      headers: { "x-ratelimit-reset-requests": "5s", "x-ratelimit-remaining-requests": "0" },
      body: openai("Invalid value for 'temperature'.", "invalid_request_error", null),
    },
    reason: "invalid_request",
    retry_after_ms: null,
  },
  {
    provider: "headers",
    name: "an RFC 3339 reset already past",
    failure: {
      status: 429,
      headers: {
        "anthropic-ratelimit-requests-reset": at(-5000),
        "anthropic-ratelimit-requests-remaining": "0",
      },
      body: anthropic("rate_limit_error", "Request rate exceeded."),
    },
    reason: "rate_limit",
    retry_after_ms: 0,
  },
  {
    provider: "headers",
    name: "body: retry after N seconds",
    failure: { status: 429, body: { error: { message: "Too many requests, retry after 3 seconds." } } },
    reason: "rate_limit",
    retry_after_ms: 3000,
  },
  {
    provider: "headers",
    name: "body: please retry in 1.5s",
    failure: {
      status: 429,
      body: {
        error: {
          code: 429,
          message: "Quota exceeded for this minute. Please retry in 1.5s.",
          status: "RESOURCE_EXHAUSTED",
        },
      },
    },
    reason: "rate_limit",
    retry_after_ms: 1500,
  },
  {
    provider: "headers",
    name: "body: try again in 450ms, on a 503",
    failure: { status: 503, body: { error: "backend restarting, try again in 450ms" } },
    reason: "server_error",
    retry_after_ms: 450,
  },
];
