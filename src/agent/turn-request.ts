// What a caller of one turn asks of its model calls: an API client's own system text, output cap,
// sampling parameters, response format and the OpenAI fields it sends on (the gateway's
// `model: "tenax"`). They hold for every model call of the turn and for that turn only: they are
// not history, and the session's next turn has its own.
import type { ResponseFormat, SamplingParams } from "../llm/provider.js";

export interface TurnRequest {
  /**
   * The caller's system text: `append` puts it after the profile's system prompt, `replace` sends
   * it instead of that prompt.
   */
  system?: { text: string; mode: "append" | "replace" };
  /**
   * A cap on every model call's output. A reply it cuts ends the turn as the caller asked (partial,
   * finish reason `length`): it is never continued past the cap.
   */
  maxOutputTokens?: number;
  params?: SamplingParams;
  /**
   * The turn's text streams to a client that cannot take any of it back (an OpenAI client): a
   * model call whose stream breaks mid-reply goes on only with an attempt that says the same
   * first, or fails (the router's `appendOnly`).
   */
  appendOnly?: boolean;
  /** The shape every model call is asked for, so the reply that ends the turn has it (JSON for a schema). */
  responseFormat?: ResponseFormat;
  /** OpenAI-wire fields sent as they came with each call (ChatRequest.extra): metadata, store, ... */
  extra?: Record<string, unknown>;
}

/** The system prompt the turn's model calls are sent with. */
export function turnSystem(profile: string | null, request: TurnRequest | undefined): string | null {
  const own = request?.system;
  if (own === undefined || own.text === "") return profile;
  if (own.mode === "replace" || !profile) return own.text;
  return `${profile}\n\n${own.text}`;
}

/** The fields of each model call's request that the turn's caller decides. */
export function callSettings(request: TurnRequest | undefined): {
  max_output_tokens?: number;
  params?: SamplingParams;
  response_format?: ResponseFormat;
  extra?: Record<string, unknown>;
} {
  if (request === undefined) return {};
  const params = request.params ?? {};
  const extra = request.extra ?? {};
  return {
    ...(request.maxOutputTokens === undefined ? {} : { max_output_tokens: request.maxOutputTokens }),
    ...(Object.keys(params).length > 0 ? { params } : {}),
    ...(request.responseFormat === undefined ? {} : { response_format: request.responseFormat }),
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
  };
}
