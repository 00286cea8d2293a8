// A model call stored as a session like any turn: the session (source `gateway-model`, the model
// asked for) and the call's messages before the call, the answer after it. With X-Session-Id the
// call goes into that session: only its new messages, those after the last assistant message of
// the request (the new question, or the tool results), are added.

import { HttpError } from "../http/http-error.js";
import type { Completion } from "../llm/model-call.js";
import type { ChatMessage, ContentPart } from "../llm/provider.js";
import type { Target } from "../llm/route-events.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";

export const MODEL_CALL_SOURCE = "gateway-model";

/** The writes that record a call's request, and the session they go to. */
export async function requestOps(
  store: StorePort,
  target: Target,
  messages: readonly ChatMessage[],
  sessionId: string | undefined,
): Promise<{ sessionId: string; ops: WriteOp[] }> {
  if (sessionId === undefined) {
    const { id, op } = store.sessionOp({
      source: MODEL_CALL_SOURCE,
      model: `${target.provider}/${target.model}`,
    });
    return { sessionId: id, ops: [op, ...messages.map((m) => messageOp(store, id, m))] };
  }
  if (!(await store.getSession(sessionId)))
    throw new HttpError(
      404,
      "not_found_error",
      "session_not_found",
      `no session ${sessionId}; leave out X-Session-Id to start a new one (GET /api/sessions lists them)`,
    );
  const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
  return { sessionId, ops: messages.slice(lastAssistant + 1).map((m) => messageOp(store, sessionId, m)) };
}

/** The write that records the answer. */
export function answerOp(store: StorePort, sessionId: string, completion: Completion): WriteOp {
  return store.messageOp({
    session_id: sessionId,
    role: "assistant",
    content: completion.text === "" && completion.tool_calls.length > 0 ? null : completion.text,
    tool_calls:
      completion.tool_calls.length > 0
        ? completion.tool_calls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: c.arguments },
          }))
        : null,
  });
}

function messageOp(store: StorePort, sessionId: string, m: ChatMessage): WriteOp {
  switch (m.role) {
    case "system":
      return store.messageOp({ session_id: sessionId, role: "system", content: m.content });
    case "user":
      return store.messageOp({
        session_id: sessionId,
        role: "user",
        content: typeof m.content === "string" ? m.content : m.content.map(wirePart),
      });
    case "assistant":
      return store.messageOp({
        session_id: sessionId,
        role: "assistant",
        content: m.content,
        tool_calls: m.tool_calls?.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.name, arguments: c.arguments },
        })),
      });
    case "tool":
      return store.messageOp({
        session_id: sessionId,
        role: "tool",
        content: m.content,
        tool_call_id: m.tool_call_id,
      });
    default: {
      const unreachable: never = m;
      throw new Error(`unknown role ${JSON.stringify(unreachable)}`);
    }
  }
}

/** A part as the client sent it (OpenAI's shape), so the stored session reads like the request. */
function wirePart(part: ContentPart): Record<string, unknown> {
  if (part.type === "text") return { type: "text", text: part.text };
  return { type: "image_url", image_url: { url: part.url, ...(part.detail ? { detail: part.detail } : {}) } };
}
