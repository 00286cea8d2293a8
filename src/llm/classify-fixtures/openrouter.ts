// OpenRouter: rows for the classifier's table-driven test.
import { type FixtureRow, NOW, router } from "./shared.js";

export const openrouterRows: readonly FixtureRow[] = [
  {
    provider: "openrouter",
    name: "402 not enough credits, even though it names max_tokens",
    failure: {
      status: 402,
      body: router(
        402,
        "This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, but can only afford 2100.",
      ),
    },
    reason: "billing",
  },
  {
    provider: "openrouter",
    name: "403 moderation with metadata.reasons",
    failure: {
      status: 403,
      body: router(403, "meta-llama/llama-guard requires moderation on this input", {
        reasons: ["harassment"],
        flagged_input: "an example of ...flagged text",
        provider_name: "SomeHost",
        model_slug: "vendor/model",
      }),
    },
    reason: "content_policy_blocked",
  },
  {
    provider: "openrouter",
    name: "generic outer message, upstream overload in metadata.raw as JSON text",
    failure: {
      status: 429,
      body: router(429, "Provider returned error", {
        raw: JSON.stringify({ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
        provider_name: "Anthropic",
      }),
    },
    reason: "overloaded",
    message: "Provider returned error (Anthropic: Overloaded)",
  },
  {
    provider: "openrouter",
    name: "generic outer message, upstream context_length_exceeded in metadata.raw",
    failure: {
      status: 400,
      body: router(400, "Provider returned error", {
        raw: JSON.stringify({
          error: {
            message: "This model's maximum context length is 65536 tokens.",
            type: "invalid_request_error",
            code: "context_length_exceeded",
          },
        }),
        provider_name: "DeepInfra",
      }),
    },
    reason: "context_overflow",
  },
  {
    provider: "openrouter",
    name: "metadata.raw as plain text saying the context window is exceeded",
    failure: {
      status: 400,
      body: router(400, "Provider returned error", {
        raw: "the prompt exceeds the model's context window of 32768 tokens",
        provider_name: "Together",
      }),
    },
    reason: "context_overflow",
    message: "Together: the prompt exceeds",
  },
  {
    provider: "openrouter",
    name: "upstream unknown parameter about max_tokens stays a request error",
    failure: {
      status: 400,
      body: router(400, "Provider returned error", {
        raw: '{"error":{"message":"Unknown parameter: max_tokens","type":"invalid_request_error"}}',
        provider_name: "Groq",
      }),
    },
    reason: "invalid_request",
  },
  {
    provider: "openrouter",
    name: "429 with the reset relayed in metadata.headers (epoch ms)",
    failure: {
      status: 429,
      body: router(429, "Rate limit exceeded: free-models-per-day", {
        headers: {
          "X-RateLimit-Limit": "50",
          "X-RateLimit-Remaining": "0",
          "X-RateLimit-Reset": String(NOW + 90_000),
        },
      }),
    },
    reason: "rate_limit",
    retry_after_ms: 90_000,
  },
  {
    provider: "openrouter",
    name: "401 no auth credentials",
    failure: { status: 401, body: router(401, "No auth credentials found") },
    reason: "auth",
  },
  {
    provider: "openrouter",
    name: "404 no endpoints for the model",
    failure: { status: 404, body: router(404, "No endpoints found for vendor/imaginary-model.") },
    reason: "model_not_found",
  },
  {
    provider: "openrouter",
    name: "error event with code 502 inside a 200 stream",
    failure: {
      status: 200,
      phase: "stream",
      body: router(502, "Provider returned error", {
        raw: "upstream connect error",
        provider_name: "SomeHost",
      }),
    },
    reason: "server_error",
  },
  {
    provider: "openrouter",
    name: "error event with code 429 inside a 200 stream",
    failure: { status: 200, phase: "stream", body: router(429, "Rate limit exceeded") },
    reason: "rate_limit",
  },
  {
    provider: "openrouter",
    name: "408 timed out",
    failure: { status: 408, body: router(408, "Request timed out") },
    reason: "timeout",
  },
  {
    provider: "openrouter",
    name: "503 no provider meets the routing requirements",
    failure: {
      status: 503,
      body: router(503, "No available model provider that meets your routing requirements"),
    },
    reason: "server_error",
  },
];
