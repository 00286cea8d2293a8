// OpenAI: rows for the classifier's table-driven test.
import { type FixtureRow, openai } from "./shared.js";

export const openaiRows: readonly FixtureRow[] = [
  {
    provider: "openai",
    name: "429 tokens-per-minute limit, wait given in the message",
    failure: {
      status: 429,
      headers: { "x-ratelimit-reset-tokens": "3s", "x-ratelimit-remaining-tokens": "0" },
      body: openai(
        "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29800, Requested 900. Please try again in 1.4s.",
        "tokens",
        "rate_limit_exceeded",
      ),
    },
    reason: "rate_limit",
    retry_after_ms: 1400,
    message: "Rate limit reached for gpt-4o",
  },
  {
    provider: "openai",
    name: "429 with only reset headers: the exhausted window (requests) decides",
    failure: {
      status: 429,
      headers: {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "12000",
        "x-ratelimit-reset-tokens": "1s",
      },
      body: openai(
        "You have hit the requests-per-day limit for this model.",
        "requests",
        "rate_limit_exceeded",
      ),
    },
    reason: "rate_limit",
    retry_after_ms: 360_000,
  },
  {
    provider: "openai",
    name: "429 with reset headers and no remaining counts: the longer reset",
    failure: {
      status: 429,
      headers: { "X-RateLimit-Reset-Requests": "20ms", "X-RateLimit-Reset-Tokens": "1.5s" },
      body: openai("Too many requests for this organization.", "requests", "rate_limit_exceeded"),
    },
    reason: "rate_limit",
    retry_after_ms: 1500,
  },
  {
    provider: "openai",
    name: "insufficient_quota arrives as a 429 but is billing (reset headers ignored)",
    failure: {
      status: 429,
      headers: { "x-ratelimit-reset-requests": "1s" },
      body: openai(
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
      ),
    },
    reason: "billing",
    message: "exceeded your current quota",
  },
  {
    provider: "openai",
    name: "overload wording inside a 429 is overloaded",
    failure: {
      status: 429,
      body: openai("The engine is currently overloaded, please try again later.", "requests", null),
    },
    reason: "overloaded",
  },
  {
    provider: "openai",
    name: "503 engine overloaded",
    failure: {
      status: 503,
      body: openai("That model is currently overloaded with other requests.", "server_error", null),
    },
    reason: "overloaded",
  },
  {
    provider: "openai",
    name: "400 context_length_exceeded",
    failure: {
      status: 400,
      body: openai(
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
      ),
    },
    reason: "context_overflow",
  },
  {
    provider: "openai",
    name: "unsupported parameter naming max_tokens is a request error, not an overflow",
    failure: {
      status: 400,
      body: openai(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        "invalid_request_error",
        "unsupported_parameter",
        "max_tokens",
      ),
    },
    reason: "invalid_request",
    message: "max_completion_tokens",
  },
  {
    provider: "openai",
    name: "unknown parameter max_tokens, no code, even with a known oversized request",
    failure: {
      status: 400,
      body: openai(
        "Unknown parameter: 'max_tokens'. Too many tokens settings given.",
        "invalid_request_error",
        null,
      ),
      request_tokens: 300_000,
      context_window: 128_000,
    },
    reason: "invalid_request",
  },
  {
    provider: "openai",
    name: "401 invalid_api_key, the key is redacted from the message",
    failure: {
      status: 401,
      body: openai(
        "Incorrect API key provided: sk-proj-AbCdEf0123456789xyz. You can find your API key in your account settings.",
        "invalid_request_error",
        "invalid_api_key",
      ),
    },
    reason: "auth",
    message: "Incorrect API key provided: sk-[redacted]",
    not_in_message: "AbCdEf0123456789",
  },
  {
    provider: "openai",
    name: "404 model_not_found",
    failure: {
      status: 404,
      body: openai(
        "The model `gpt-imaginary` does not exist or you do not have access to it.",
        "invalid_request_error",
        "model_not_found",
      ),
    },
    reason: "model_not_found",
  },
  {
    provider: "openai",
    name: "403 unsupported region",
    failure: {
      status: 403,
      body: openai(
        "Country, region, or territory not supported.",
        "request_forbidden",
        "unsupported_country_region_territory",
      ),
    },
    reason: "auth_permanent",
  },
  {
    provider: "openai",
    name: "500 server_error",
    failure: {
      status: 500,
      body: openai(
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        null,
      ),
    },
    reason: "server_error",
  },
  {
    provider: "openai",
    name: "400 rejected by the safety system",
    failure: {
      status: 400,
      body: openai(
        "Your request was rejected as a result of our safety system.",
        "invalid_request_error",
        "content_policy_violation",
      ),
    },
    reason: "content_policy_blocked",
  },
  {
    provider: "openai",
    name: "429 request larger than the whole TPM limit: shrink, do not wait",
    failure: {
      status: 429,
      body: openai(
        "Request too large for gpt-4 on tokens per min (TPM): Limit 10000, Requested 14500. The input or output tokens must be reduced in order to run successfully.",
        "tokens",
        "rate_limit_exceeded",
      ),
    },
    reason: "context_overflow",
  },
  {
    provider: "openai",
    name: "plain 400 request error",
    failure: {
      status: 400,
      body: openai(
        "Invalid value for 'messages[2].role': 'robot'.",
        "invalid_request_error",
        "invalid_value",
      ),
    },
    reason: "invalid_request",
  },
  {
    provider: "openai",
    name: "vague 400 for a request known to exceed the window",
    failure: {
      status: 400,
      body: openai("Bad request.", "invalid_request_error", null),
      request_tokens: 140_000,
      context_window: 128_000,
    },
    reason: "context_overflow",
  },
  {
    provider: "openai",
    name: "same vague 400 within the window",
    failure: {
      status: 400,
      body: openai("Bad request.", "invalid_request_error", null),
      request_tokens: 1000,
      context_window: 128_000,
    },
    reason: "invalid_request",
  },
  {
    provider: "openai",
    name: "502 HTML page from a proxy",
    failure: {
      status: 502,
      body: "<html><head><title>502 Bad Gateway</title></head><body>bad gateway</body></html>",
    },
    reason: "server_error",
    message: "502 Bad Gateway",
  },
  {
    provider: "openai",
    name: "503 with retry-after seconds",
    failure: { status: 503, headers: { "retry-after": "30" }, body: "Service Unavailable" },
    reason: "server_error",
    retry_after_ms: 30_000,
  },
];
