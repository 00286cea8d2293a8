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
  for await (const event of events) {
    switch (event.type) {
      case "text": {
        const delta = text.push(event.delta);
        if (delta !== "") yield { type: "text", delta };
        break;
      }
      case "tool_call":
        yield* flush();
        yield { ...event, ...call(event) };
        break;
      case "usage":
        yield event;
        break;
      case "done":
        yield* flush();
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
}
