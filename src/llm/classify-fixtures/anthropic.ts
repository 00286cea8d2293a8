// Anthropic: rows for the classifier's table-driven test.
import { anthropic, at, type FixtureRow } from "./shared.js";

export const anthropicRows: readonly FixtureRow[] = [
  {
    provider: "anthropic",
    name: "529 overloaded_error",
    failure: { status: 529, body: anthropic("overloaded_error", "Overloaded") },
    reason: "overloaded",
    message: "Overloaded",
  },
  {
    provider: "anthropic",
    name: "overloaded_error event inside a 200 stream",
    failure: { status: 200, phase: "stream", body: anthropic("overloaded_error", "Overloaded") },
    reason: "overloaded",
  },
  {
    provider: "anthropic",
    name: "429 rate_limit_error: retry-after wins over the reset timestamps",
    failure: {
      status: 429,
      headers: { "retry-after": "12", "anthropic-ratelimit-requests-reset": at(40_000) },
      body: anthropic(
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit.",
      ),
    },
    reason: "rate_limit",
    retry_after_ms: 12_000,
  },
  {
    provider: "anthropic",
    name: "429 with RFC 3339 resets: the exhausted token window decides",
    failure: {
      status: 429,
      headers: {
        "anthropic-ratelimit-requests-remaining": "40",
        "anthropic-ratelimit-requests-reset": at(2000),
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": at(45_000),
      },
      body: anthropic("rate_limit_error", "This request would exceed your organization's rate limit."),
    },
    reason: "rate_limit",
    retry_after_ms: 45_000,
  },
  {
    provider: "anthropic",
    name: "401 authentication_error",
    failure: { status: 401, body: anthropic("authentication_error", "invalid x-api-key") },
    reason: "auth",
  },
  {
    provider: "anthropic",
    name: "403 permission_error",
    failure: {
      status: 403,
      body: anthropic(
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
      ),
    },
    reason: "auth_permanent",
  },
  {
    provider: "anthropic",
    name: "404 not_found_error for a model",
    failure: { status: 404, body: anthropic("not_found_error", "model: claude-imaginary-9") },
    reason: "model_not_found",
  },
  {
    provider: "anthropic",
    name: "413 request_too_large",
    failure: {
      status: 413,
      body: anthropic("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    },
    reason: "payload_too_large",
  },
  {
    provider: "anthropic",
    name: "prompt is too long",
    failure: {
      status: 400,
      body: anthropic("invalid_request_error", "prompt is too long: 208114 tokens > 200000 maximum"),
    },
    reason: "context_overflow",
  },
  {
    provider: "anthropic",
    name: "input plus max_tokens exceed the context limit",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "input length and `max_tokens` exceed context limit: 190000 + 16000 > 200000, decrease input length or `max_tokens` and try again",
      ),
    },
    reason: "context_overflow",
  },
  {
    provider: "anthropic",
    name: "max_tokens above the model's output cap is a request error",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "max_tokens: 128000 > 64000, which is the maximum allowed number of output tokens for this model",
      ),
    },
    reason: "invalid_request",
  },
  {
    provider: "anthropic",
    name: "invalid signature in a thinking block",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "messages.1.content.0: Invalid `signature` in `thinking` block",
      ),
    },
    reason: "thinking_signature",
  },
  {
    provider: "anthropic",
    name: "modified thinking blocks",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "messages.3.content: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified",
      ),
    },
    reason: "thinking_signature",
  },
  {
    provider: "anthropic",
    name: "long-context tier missing, sent as a 429 rate_limit_error",
    failure: {
      status: 429,
      headers: { "retry-after": "60" },
      body: anthropic("rate_limit_error", "Extra usage is required for long context requests."),
    },
    reason: "long_context_tier",
    retry_after_ms: 60_000,
  },
  {
    provider: "anthropic",
    name: "long-context beta not available, sent as a 400",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "The long context beta is not yet available for this subscription.",
      ),
    },
    reason: "long_context_tier",
  },
  {
    provider: "anthropic",
    name: "monthly spend limit: a 429 rate_limit_error that is billing",
    failure: {
      status: 429,
      body: {
        type: "error",
        error: {
          type: "rate_limit_error",
          message: "You have reached your monthly spend limit.",
          details: { error_code: "enforced_spend_limit_reached" },
        },
      },
    },
    reason: "billing",
  },
  {
    provider: "anthropic",
    name: "credit balance too low (400)",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "Your credit balance is too low to access the API. Please go to Plans & Billing to purchase credits.",
      ),
    },
    reason: "billing",
  },
  {
    provider: "anthropic",
    name: "workspace usage limit reached (400) is billing",
    failure: {
      status: 400,
      body: anthropic(
        "invalid_request_error",
        "You have reached your specified workspace API usage limits. Access returns on the first of next month.",
      ),
    },
    reason: "billing",
  },
  {
    provider: "headers",
    name: "'usage limit' inside a 429 stays a rate limit",
    failure: { status: 429, body: { error: { message: "Per-minute usage limit exceeded for this key." } } },
    reason: "rate_limit",
  },
  {
    provider: "anthropic",
    name: "402 billing_error",
    failure: { status: 402, body: anthropic("billing_error", "There is an issue with your payment method.") },
    reason: "billing",
  },
  {
    provider: "anthropic",
    name: "500 api_error",
    failure: { status: 500, body: anthropic("api_error", "Internal server error") },
    reason: "server_error",
  },
  {
    provider: "anthropic",
    name: "api_error event inside a 200 stream",
    failure: { status: 200, phase: "stream", body: anthropic("api_error", "Internal server error") },
    reason: "server_error",
  },
];
