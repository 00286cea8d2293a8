// Realistic failures for the classifier's tests, one row per case. Bodies are written in our own words
// from what each provider's public docs say about its error shapes, fields, status codes and messages.
import type { ErrorReason, ProviderFailure } from "../classified-error.js";

/** The fixed clock of every row: 2025-01-15T12:00:00Z. */
export const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);
export const at = (offsetMs: number): string => new Date(NOW + offsetMs).toISOString();
export const httpDate = (offsetMs: number): string => new Date(NOW + offsetMs).toUTCString();

export interface FixtureRow {
  provider: "openai" | "anthropic" | "openrouter" | "ollama" | "vllm" | "llama.cpp" | "transport" | "headers";
  name: string;
  failure: Partial<ProviderFailure>;
  reason: ErrorReason;
  /** Expected retry_after_ms; null when omitted. */
  retry_after_ms?: number | null;
  /** A fragment the message must contain, when the message matters. */
  message?: string;
  /** A fragment the message must never contain (a secret). */
  not_in_message?: string;
  /** Classify without a clock. */
  no_clock?: boolean;
}

export const openai = (message: string, type: string, code: string | null, param: string | null = null) => ({
  error: { message, type, param, code },
});
export const anthropic = (type: string, message: string) => ({
  type: "error",
  error: { type, message },
  request_id: "req_0123456789abcdef",
});
export const router = (code: number, message: string, metadata?: Record<string, unknown>) => ({
  error: { code, message, ...(metadata ? { metadata } : {}) },
});
export const llamacpp = (
  code: number,
  message: string,
  type: string,
  extra: Record<string, unknown> = {},
) => ({
  error: { code, message, type, ...extra },
});
