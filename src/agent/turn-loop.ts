// A turn's model/tool loop, once its start is made (src/agent/turn-start.ts): the model is called
// with the history as stored, compressed when needed; each assistant message is committed as it
// comes, except the final answer, which is left to the turn's end; tool calls run only once the
// start is durable, each result committed as it completes; a reply the output limit cut is
// continued. It ends by returning (an answer) or throwing (a guardrail, an abort, an error).
import { describeSnapshot } from "../checkpoints/describe.js";
import { ProviderError } from "../llm/classified-error.js";
import type { Completion } from "../llm/model-call.js";
import type { ToolSpec } from "../llm/provider.js";
import type { RouteEvent } from "../llm/route-events.js";
import type { TurnRoute } from "../llm/router.js";
import type { StorePort } from "../store/port.js";
import { Guardrails } from "./guardrails.js";
import { buildHistory, COMPACTION_KIND, type Compaction } from "./history.js";
import { runToolCall } from "./tool-call.js";
import type { Tool, TurnToolContext } from "./tools/types.js";
import type { GuardrailCode } from "./turn-failure.js";
import { callSettings, turnSystem } from "./turn-request.js";
import { settleOpenCalls } from "./turn-resume.js";
import type { TurnRun } from "./turn-run.js";
import type { TurnStart } from "./turn-start.js";
import type { AgentEvent, TurnDeps, TurnInput } from "./turn-types.js";

/** The user message Tenax adds to continue a reply the output limit cut. */
export const CONTINUE_PROMPT =
  "Continue exactly where your last message stopped, without repeating anything.";
export const CONTINUE_NAME = "tenax-continue";

/** A guardrail stopped the turn: it fails with the guardrail's code. */
export class TurnHalted extends Error {
  constructor(
    readonly code: GuardrailCode,
    message: string,
  ) {
    super(message);
  }
}

/** The provider's finish reasons for a reply the output limit cut (OpenAI's, Anthropic's). */
export function cutByOutputLimit(finishReason: string | null): boolean {
  return finishReason === "length" || finishReason === "max_tokens";
}

/** Run the turn's model calls and tools until a final answer; throws what stopped it otherwise. */
export async function runTurnLoop(agent: TurnDeps, input: TurnInput, start: TurnStart, run: TurnRun) {
  const { signal } = start;
  const tools = turnTools(agent, input, start);
  const model = turnModel(agent, input, start, run, tools.specs);
  if (start.resumed) {
    start.tracked?.enter("tool");
    const halt = await settleOpenCalls(
      agent.store,
      input.sessionId,
      start.resumed,
      tools.byName,
      (call) => tools.run(call),
      async (call) => (await agent.awaitsApproval?.(input.sessionId, start.turnId, call.id)) === true,
    );
    if (halt) throw new TurnHalted("identical_call_limit", halt);
  }
  for (;;) {
    if (signal.aborted) throw signal.reason;
    if (run.iterations >= agent.limits.max_iterations) {
      throw new TurnHalted(
        "max_iterations",
        `stopped: the turn reached its budget of ${agent.limits.max_iterations} model calls (agent.max_iterations)`,
      );
    }
    run.iterations++;
    const completion = await model.next();
    run.answered(completion);
    if (completion.tool_calls.length === 0) {
      if (await said(agent, input, start, run, completion, model.capped)) continue;
      return;
    }
    await agent.store.write([assistantOp(agent.store, input, start, completion)]);
    // Nothing with side effects before the turn's start is durable.
    await start.durable;
    start.tracked?.enter("tool");
    for (const call of completion.tool_calls) {
      if (signal.aborted) throw signal.reason;
      const halt = await tools.run(call);
      if (halt) throw new TurnHalted("identical_call_limit", halt);
    }
  }
}

/**
 * A reply without tool calls: the final answer (left to the turn's end to commit), or, when the
 * output limit cut it and a continuation is allowed, committed and continued. True to go on.
 */
async function said(
  agent: TurnDeps,
  input: TurnInput,
  start: TurnStart,
  run: TurnRun,
  completion: Completion,
  capped: boolean,
): Promise<boolean> {
  const message = assistantOp(agent.store, input, start, completion);
  const cut = cutByOutputLimit(completion.finish_reason);
  // A cap the caller set is what it asked for: a reply it cuts is not continued past it.
  const continues = cut && !capped && run.continuations < agent.limits.max_continuations;
  if (!continues) {
    // A reply that ends the turn is committed with the turn's end.
    run.answer = message;
    run.replyParts.push(completion.text);
    if (cut) run.partial = true;
    return false;
  }
  // A reply that goes on is committed now: the continuation follows it.
  await agent.store.write([message]);
  run.replyParts.push(completion.text);
  run.continuations++;
  start.emit({ type: "continuation", turn_id: start.turnId, count: run.continuations });
  await agent.store.appendMessage({
    session_id: input.sessionId,
    role: "user",
    content: CONTINUE_PROMPT,
    name: CONTINUE_NAME,
    turn_id: start.turnId,
    lease_epoch: start.epoch,
  });
  return true;
}

/** The assistant's message of a completion, as the turn writes it (fenced by its lease epoch). */
function assistantOp(store: StorePort, input: TurnInput, start: TurnStart, completion: Completion) {
  const calls = completion.tool_calls;
  return store.messageOp({
    session_id: input.sessionId,
    role: "assistant",
    content: completion.text === "" && calls.length > 0 ? null : completion.text,
    tool_calls: calls.length > 0 ? calls : null,
    turn_id: start.turnId,
    lease_epoch: start.epoch,
  });
}

interface TurnTools {
  specs: ToolSpec[];
  byName: Map<string, Tool>;
  /** Run one call (guardrails, its events, its result committed); a guardrail's words to halt. */
  run(call: Completion["tool_calls"][number]): Promise<string | null>;
}

/** The turn's tools, with the context each call runs in (the turn's abort, its checkpoints). */
function turnTools(agent: TurnDeps, input: TurnInput, start: TurnStart): TurnTools {
  const { emit } = start;
  const guard = new Guardrails(agent.limits);
  const byName = new Map(agent.tools.map((t) => [t.spec.name, t]));
  const snapshotted = new Map<string, Promise<unknown>>();
  const context: TurnToolContext = {
    signal: start.signal,
    sessionId: input.sessionId,
    turnId: start.turnId,
    leaseEpoch: start.epoch,
    taskId: start.taskId,
    cwd: input.cwd,
    emit,
    approvals: input.approvals ?? null,
    beforeFileChange: async (dir, reason) => {
      if (agent.checkpoint === null) return;
      // At most one snapshot per project per turn, shared by concurrent callers.
      let pending = snapshotted.get(dir);
      if (!pending) {
        pending = agent.checkpoint(dir, reason).then(
          (result) =>
            emit({
              type: "checkpoint",
              layer: "checkpoints",
              project: dir,
              result,
              message: describeSnapshot(dir, result),
            }),
          (e: unknown) =>
            emit({
              type: "checkpoint_failed",
              layer: "checkpoints",
              message: `snapshot of ${dir} failed: ${String(e)}`,
            }),
        );
        snapshotted.set(dir, pending);
      }
      await pending;
    },
  };
  return {
    specs: agent.tools.map((t) => t.spec),
    byName,
    run: (call) => runToolCall(agent, byName, guard, call, context, emit),
  };
}

interface TranscriptView {
  transcript: Awaited<ReturnType<StorePort["getMessages"]>>;
  compaction: Compaction | null;
}

interface TurnModel {
  /** Whether the caller capped the output (a reply it cuts is then not continued). */
  capped: boolean;
  /** The next model call's answer, compressing first when needed, or once on an overflow. */
  next(): Promise<Completion>;
}

function turnModel(
  agent: TurnDeps,
  input: TurnInput,
  start: TurnStart,
  run: TurnRun,
  specs: ToolSpec[],
): TurnModel {
  const { store } = agent;
  const { signal, tracked } = start;
  const route = input.route ?? agent.router.turn();
  const window = () => agent.router.limits(route.target)?.context_window ?? agent.defaultWindow ?? 128_000;
  const system = turnSystem(agent.system, input.request);
  const settings = callSettings(input.request);
  const ask = (view: TranscriptView) =>
    callModel(route, { system, compaction: view.compaction, transcript: view.transcript }, settings, specs, {
      signal,
      emit: start.emit,
      progress: () => tracked?.progress(),
      appendOnly: input.request?.appendOnly === true,
    });
  /** What the next model call is built from: the transcript as stored now, with its compaction. */
  const readView = async (): Promise<TranscriptView> => ({
    transcript: await store.getMessages(input.sessionId),
    compaction: await store.getRecord<Compaction>(COMPACTION_KIND, input.sessionId),
  });
  /** Compress when needed; true when it did, and `view` (read before) is then out of date. */
  const compressIfNeeded = async (reason: "threshold" | "overflow", view: TranscriptView) => {
    if (!agent.compressor) return false;
    const sizes = { ...view, system, window: window(), lastInputTokens: run.lastInputTokens };
    if (reason === "threshold" && !agent.compressor.needed(sizes)) return false;
    // Compression tells of itself: not before the turn is durable and told.
    await start.durable;
    tracked?.enter("compression");
    const made = await agent.compressor.compress(
      { ...sizes, sessionId: input.sessionId, turnId: start.turnId, leaseEpoch: start.epoch, reason, signal },
      run.compression,
    );
    tracked?.enter("provider");
    if (made) run.lastInputTokens = null;
    return made !== null;
  };
  return {
    capped: settings.max_output_tokens !== undefined,
    next: async () => {
      let view = await readView();
      if (await compressIfNeeded("threshold", view)) view = await readView();
      tracked?.enter("provider");
      try {
        return await ask(view);
      } catch (e) {
        // The provider itself said the context is too long: one bounded compression, then again.
        if (!isOverflow(e) || signal.aborted) throw e;
        run.overflow = { compressed: false };
        if (!(await compressIfNeeded("overflow", await readView()))) throw e;
        run.overflow.compressed = true;
        return await ask(await readView());
      }
    },
  };
}

async function callModel(
  route: TurnRoute,
  view: TranscriptView & { system: string | null },
  settings: ReturnType<typeof callSettings>,
  tools: ToolSpec[],
  on: { signal: AbortSignal; emit: (e: AgentEvent) => void; progress: () => void; appendOnly: boolean },
): Promise<Completion> {
  const messages = buildHistory(view.transcript, { system: view.system, compaction: view.compaction });
  // A turn reports each tool call once whole (tool_started): its streamed pieces and the token
  // log probabilities are for the model gateway's clients, not the turn's; they are progress all the same.
  const onEvent = (e: RouteEvent) => {
    if (e.type !== "tool_call_delta" && e.type !== "logprobs") on.emit(e);
    else on.progress();
  };
  return route.complete(
    { messages, ...settings, ...(tools.length > 0 ? { tools } : {}) },
    { signal: on.signal, onEvent, appendOnly: on.appendOnly },
  );
}

function isOverflow(error: unknown): boolean {
  return error instanceof ProviderError && error.classified.compress;
}
