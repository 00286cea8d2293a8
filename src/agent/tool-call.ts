// One tool call of a turn: the guardrails' verdict, the tool run with the turn's context (its
// arguments parsed and checked), the result committed as a tool message, and the guardrails told
// how it went. A tool that throws becomes a JSON error result; only an interrupt ends the turn.
import type { Redactor } from "../core/redact.js";
import type { ToolCall } from "../llm/provider.js";
import { traceToolCall } from "./agent-trace.js";
import type { Guardrails } from "./guardrails.js";
import { errorResult, summarizeToolResult } from "./tool-summary.js";
import { type Tool, type ToolContext, ToolError, type TurnToolContext } from "./tools/types.js";
import type { AgentEvent, TurnDeps } from "./turn.js";

/** Results longer than this are cut (head and tail kept) before the model sees them. */
const MAX_TOOL_RESULT_CHARS = 100_000;

/** Run one tool call and commit its result; returns a halt message when the guardrails say stop. */
export function runToolCall(
  agent: TurnDeps,
  tools: Map<string, Tool>,
  guard: Guardrails,
  call: ToolCall,
  turnContext: TurnToolContext,
  emit: (e: AgentEvent) => void,
): Promise<string | null> {
  return traceToolCall(call, tools.has(call.name), () =>
    runToolCallNow(agent, tools, guard, call, turnContext, emit),
  );
}

async function runToolCallNow(
  agent: TurnDeps,
  tools: Map<string, Tool>,
  guard: Guardrails,
  call: ToolCall,
  turnContext: TurnToolContext,
  emit: (e: AgentEvent) => void,
): Promise<{ value: string | null; failed: boolean }> {
  const context: ToolContext = { ...turnContext, callId: call.id };
  const started = agent.deps.clock.now();
  emit({
    type: "tool_started",
    turn_id: context.turnId,
    id: call.id,
    name: call.name,
    arguments: call.arguments,
  });
  const tool = tools.get(call.name);
  // The real leak path: a command's output (`env`, a config file, `grep -o . .env`) reaches neither
  // the model nor the store with a secret in it, whole or spread out. Redacted before it is cut,
  // so no cut leaves part of one.
  const redact = (value: unknown) => redactedResult(agent.redactor, value);
  let result: string;
  let failed = false;
  const verdict = guard.before(call.name, call.arguments);
  if (verdict.action === "block") {
    result = redact(errorResult(verdict.message));
    failed = true;
  } else if (!tool) {
    result = redact(
      errorResult(`there is no tool named ${call.name}; the tools are: ${[...tools.keys()].join(", ")}`),
    );
    failed = true;
  } else {
    try {
      const args = parseArguments(call.arguments);
      result = bounded(redact(await tool.run(args, context)));
    } catch (e) {
      if (context.signal.aborted) throw context.signal.reason;
      failed = true;
      result = redact(
        e instanceof ToolError
          ? errorResult(e.message, e.details)
          : errorResult(`${call.name} failed: ${e instanceof Error ? e.message : String(e)}`),
      );
    }
  }
  await agent.store.appendMessage({
    session_id: context.sessionId,
    role: "tool",
    content: result,
    tool_call_id: call.id,
    name: call.name,
    turn_id: context.turnId,
    lease_epoch: context.leaseEpoch,
  });
  emit({
    type: "tool_finished",
    turn_id: context.turnId,
    id: call.id,
    name: call.name,
    ok: !failed,
    ms: agent.deps.clock.now() - started,
    summary: summarizeToolResult(call.name, result, failed),
  });
  const after = guard.after(call.name, call.arguments, result, { failed, poller: tool?.poller === true });
  return { value: after.action === "halt" ? after.message : null, failed };
}

function parseArguments(text: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = text.trim() === "" ? {} : JSON.parse(text);
  } catch (e) {
    throw new ToolError(`the arguments are not valid JSON (${(e as Error).message}); send a JSON object`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ToolError("the arguments must be a JSON object");
  }
  return parsed as Record<string, unknown>;
}

/**
 * A tool's result as the text the model and the store get, with the profile's secrets redacted:
 * each string of it read for secrets whole and spread out before JSON escapes (`\n` between the
 * characters of `grep -o .`) could split a run, then the JSON text for whole secrets once more.
 */
function redactedResult(redactor: Redactor | undefined, value: unknown): string {
  if (redactor === undefined) return typeof value === "string" ? value : JSON.stringify(value ?? null);
  if (typeof value === "string") return redactor.redactOutput(value);
  return redactor.redact(JSON.stringify(redactor.redactOutputDeep(value ?? null)));
}

function bounded(text: string): string {
  if (text.length <= MAX_TOOL_RESULT_CHARS) return text;
  const half = MAX_TOOL_RESULT_CHARS / 2;
  return `${text.slice(0, half)}\n[... ${text.length - MAX_TOOL_RESULT_CHARS} characters cut by Tenax ...]\n${text.slice(-half)}`;
}
