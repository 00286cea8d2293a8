// Ollama: rows for the classifier's table-driven test.
import type { FixtureRow } from "./shared.js";

export const ollamaRows: readonly FixtureRow[] = [
  {
    provider: "ollama",
    name: "404 model not pulled",
    failure: { status: 404, body: { error: "model 'llama3.2' not found, try pulling it first" } },
    reason: "model_not_found",
    message: "try pulling it first",
  },
  {
    provider: "ollama",
    name: "model missing reported as 400 through the compatible API",
    failure: { status: 400, body: { error: 'model "qwen-imaginary" not found, try pulling it first' } },
    reason: "model_not_found",
  },
  {
    provider: "ollama",
    name: "input longer than the context",
    failure: { status: 400, body: { error: "input length exceeds the context length" } },
    reason: "context_overflow",
  },
  {
    provider: "ollama",
    name: "runner crashed",
    failure: { status: 500, body: { error: "llama runner process has terminated: signal: killed" } },
    reason: "server_error",
  },
  {
    provider: "ollama",
    name: "model lacks a capability",
    failure: {
      status: 400,
      body: { error: "registry.ollama.ai/library/tiny:latest does not support tools" },
    },
    reason: "invalid_request",
  },
  {
    provider: "ollama",
    name: "queue full",
    failure: {
      status: 503,
      body: { error: "server busy, please try again. maximum pending requests exceeded" },
    },
    reason: "overloaded",
  },
  {
    provider: "ollama",
    name: "daemon not running",
    failure: {
      status: null,
      phase: "connect",
      transport: { code: "ECONNREFUSED", name: "Error", message: "connect ECONNREFUSED 127.0.0.1:11434" },
      endpoint: "http://127.0.0.1:11434/v1",
    },
    reason: "unreachable",
    message: "could not connect to http://127.0.0.1:11434/v1 (connection refused): is the provider running?",
  },
];
