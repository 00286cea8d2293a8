// vLLM: rows for the classifier's table-driven test.
import type { FixtureRow } from "./shared.js";

export const vllmRows: readonly FixtureRow[] = [
  {
    provider: "vllm",
    name: "top-level error object: maximum context length, requested M tokens",
    failure: {
      status: 400,
      body: {
        object: "error",
        message:
          "This model's maximum context length is 4096 tokens. However, you requested 5120 tokens (4096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
        type: "BadRequestError",
        param: null,
        code: 400,
      },
    },
    reason: "context_overflow",
  },
  {
    provider: "vllm",
    name: "max_tokens too large for the remaining window is an overflow",
    failure: {
      status: 400,
      body: {
        error: {
          message:
            "'max_tokens' or 'max_completion_tokens' is too large: 2048. This model's maximum context length is 8192 tokens and your request has 7000 input tokens (2048 > 8192 - 7000).",
          type: "BadRequestError",
          param: null,
          code: 400,
        },
      },
    },
    reason: "context_overflow",
  },
  {
    provider: "vllm",
    name: "404 model does not exist",
    failure: {
      status: 404,
      body: {
        object: "error",
        message: "The model `llama-70b` does not exist.",
        type: "NotFoundError",
        param: null,
        code: 404,
      },
    },
    reason: "model_not_found",
  },
  {
    provider: "vllm",
    name: "schema rejects an extra field",
    failure: {
      status: 400,
      body: {
        object: "error",
        message:
          "[{'type': 'extra_forbidden', 'loc': ('body', 'max_tokenz'), 'msg': 'Extra inputs are not permitted'}]",
        type: "BadRequestError",
        param: null,
        code: 400,
      },
    },
    reason: "invalid_request",
  },
];
