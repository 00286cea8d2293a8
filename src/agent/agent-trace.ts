// What a turn, a tool call and a compression pass put in their spans (core/trace.ts): the GenAI
// semantic-convention attributes where they exist (invoke_agent, execute_tool, the conversation
// id), Tenax's own under `tenax.`. Ids, names, counts, codes: never a prompt, a reply, a tool's
// arguments or output.
import { currentSpan, traced } from "../core/trace.js";
import type { ToolCall } from "../llm/provider.js";
import type { CompressionEvent, CompressionInput } from "./compression.js";
import type { TurnInput, TurnResult } from "./turn.js";

/** One turn as one trace: its span is the parent of every model call, tool, compression and commit. */
export function traceTurn(input: TurnInput, run: () => Promise<TurnResult>): Promise<TurnResult> {
  return traced(
    "invoke_agent tenax",
    {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": "tenax",
      "gen_ai.conversation.id": input.sessionId,
      "tenax.turn.resumed": input.resume !== undefined,
      "tenax.turn.id": input.resume?.turnId,
    },
    async (span) => {
      const result = await run();
      span.set({
        "tenax.turn.id": result.turn_id,
        "tenax.turn.status": result.status,
        "tenax.turn.iterations": result.iterations,
        "tenax.turn.partial": result.partial,
        "gen_ai.usage.input_tokens": result.usage.input_tokens,
        "gen_ai.usage.output_tokens": result.usage.output_tokens,
        "gen_ai.response.model": result.model?.model,
        "tenax.provider": result.model?.provider,
        "gen_ai.response.finish_reasons": result.finish_reason === null ? null : [result.finish_reason],
      });
      if (result.failure !== null) span.fail(result.failure.code);
      return result;
    },
    { nestOnlyUnder: "execute_tool" },
  );
}

/** One tool call's span; `run` says whether the tool failed (a failed tool is a result, not a throw). */
export function traceToolCall<T>(
  call: ToolCall,
  known: boolean,
  run: () => Promise<{ value: T; failed: boolean }>,
): Promise<T> {
  return traced(
    `execute_tool ${call.name}`,
    {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.name,
      "gen_ai.tool.call.id": call.id,
      "gen_ai.tool.type": "function",
    },
    async (span) => {
      const { value, failed } = await run();
      if (failed) span.fail(known ? "tool_error" : "unknown_tool");
      return value;
    },
    { errorType: () => "aborted" },
  );
}

/** One compression pass's span; its events (started, done, failed, dropped, skipped) become span events. */
export function traceCompression<T>(input: CompressionInput, run: () => Promise<T>): Promise<T> {
  return traced(
    "tenax.compress",
    {
      "gen_ai.conversation.id": input.sessionId,
      "tenax.compression.reason": input.reason,
      "tenax.compression.window": input.window,
    },
    run,
  );
}

/** Adds a compression event to the active compression span (a no-op without one). */
export function compressionSpanEvent(event: CompressionEvent): void {
  const span = currentSpan();
  switch (event.type) {
    case "compression_started":
      span.set({
        "tenax.compression.tokens_before": event.tokens_before,
        "tenax.compression.messages": event.messages,
      });
      break;
    case "compression_done":
      span.set({
        "tenax.compression.outcome": "done",
        "tenax.compression.tokens_after": event.tokens_after,
        "tenax.compression.summarizer": event.model,
      });
      break;
    case "compression_dropped":
      span.set({ "tenax.compression.outcome": "dropped", "tenax.compression.why": event.why });
      break;
    case "compression_failed":
      span.set({ "tenax.compression.outcome": "failed", "tenax.compression.why": event.why });
      span.fail(event.why);
      break;
    case "compression_skipped":
      span.set({ "tenax.compression.outcome": "skipped", "tenax.compression.why": event.why });
      break;
    default:
      event satisfies never;
  }
}
