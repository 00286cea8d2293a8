// The model-output boundary: every event of a provider call, with the profile's secrets redacted
// before any layer above sees it: the reply's text (a secret split over deltas included), tool
// calls, the final text, and the error message (the provider may quote the key it was sent).
import type { Redactor } from "../core/redact.js";
import type { Provider, ProviderEvent, ToolCall } from "./provider.js";

export function redactingProvider(provider: Provider, redactor: Redactor): Provider {
  if (redactor.size === 0) return provider;
  return {
    name: provider.name,
    stream: (request, options) => redactEvents(provider.stream(request, options), redactor),
  };
}

async function* redactEvents(
  events: AsyncIterable<ProviderEvent>,
  redactor: Redactor,
): AsyncIterable<ProviderEvent> {
  // One per call: a retried call starts its text afresh, and so does its redaction.
  const text = redactor.stream();
  const flush = function* (): Generator<ProviderEvent> {
    const rest = text.end();
    if (rest !== "") yield { type: "text", delta: rest };
  };
  const call = (c: ToolCall): ToolCall => ({ ...c, arguments: redactor.redact(c.arguments) });
  // A tool call's streamed arguments, each call on its own (a secret split over pieces included);
  // what a stream still holds goes out as one last piece before the whole call.
  const args = new Map<number, ReturnType<Redactor["stream"]>>();
  const flushArgs = function* (): Generator<ProviderEvent> {
    for (const [index, held] of args) {
      const rest = held.end();
      if (rest !== "") yield { type: "tool_call_delta", index, arguments: rest };
    }
    args.clear();
  };
  for await (const event of events) {
    switch (event.type) {
      case "text": {
        const delta = text.push(event.delta);
        if (delta !== "") yield { type: "text", delta };
        break;
      }
      case "tool_call_delta": {
        yield* flush();
        let held = args.get(event.index);
        if (!held) {
          held = redactor.stream();
          args.set(event.index, held);
        }
        const piece = held.push(event.arguments);
        if (piece !== "" || event.id !== undefined || event.name !== undefined)
          yield { ...event, arguments: piece };
        break;
      }
      case "tool_call":
        yield* flush();
        yield* flushArgs();
        yield { ...event, ...call(event) };
        break;
      case "usage":
      case "logprobs":
        yield event;
        break;
      case "done":
        yield* flush();
        yield* flushArgs();
        yield { ...event, text: redactor.redact(event.text), tool_calls: event.tool_calls.map(call) };
        return;
      case "error":
        yield* flush();
        yield {
          type: "error",
          error: { ...event.error, message: redactor.redactMessage(event.error.message) },
        };
        return;
      default: {
        const never: never = event;
        yield never;
      }
    }
  }
  yield* flush();
  yield* flushArgs();
}
