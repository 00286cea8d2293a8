// llama.cpp server: rows for the classifier's table-driven test.
import { type FixtureRow, llamacpp } from "./shared.js";

export const llamacppRows: readonly FixtureRow[] = [
  {
    provider: "llama.cpp",
    name: "exceed_context_size_error with token counts",
    failure: {
      status: 400,
      body: llamacpp(
        400,
        "the request exceeds the available context size, try increasing it",
        "exceed_context_size_error",
        {
          n_prompt_tokens: 17000,
          n_ctx: 16384,
        },
      ),
    },
    reason: "context_overflow",
  },
  {
    provider: "llama.cpp",
    name: "exceed_context_size_error inside a 200 stream (older servers)",
    failure: {
      status: 200,
      phase: "stream",
      body: llamacpp(400, "the request exceeds the available context size", "exceed_context_size_error"),
    },
    reason: "context_overflow",
  },
  {
    provider: "llama.cpp",
    name: "503 while the model loads",
    failure: { status: 503, body: llamacpp(503, "Loading model", "unavailable_error") },
    reason: "overloaded",
  },
  {
    provider: "llama.cpp",
    name: "401 with --api-key set",
    failure: { status: 401, body: llamacpp(401, "Invalid API Key", "authentication_error") },
    reason: "auth",
  },
  {
    provider: "llama.cpp",
    name: "500 server_error",
    failure: { status: 500, body: llamacpp(500, "failed to decode the batch", "server_error") },
    reason: "server_error",
  },
];
