// The seam between the chat route and the model-gateway mode: POST /v1/chat/completions with
// `model: "PROVIDER/NAME"` is one resilient model call with the client's own tools and
// parameters, not an agent turn. The route has checked that the id names a configured model;
// the handler validates the rest of the body, answers on `res` (JSON or SSE, errors in the OpenAI
// shape) and stores the call and its answer as a session.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Target } from "../llm/route-events.js";

export interface ModelCallRequest {
  target: Target;
  /** The parsed JSON body as the client sent it, `model` included. */
  body: Record<string, unknown>;
  /** X-Session-Id, when the client sent one. */
  sessionId?: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** Aborted when the gateway interrupts the call (a drain that ran out): the call ends there. */
  signal?: AbortSignal;
}

export type ModelCallHandler = (request: ModelCallRequest) => Promise<void>;
