// One agent turn as a plain async function: the user's message is committed first, then the model
// is called with the history (the message's sync runs meanwhile, and nothing is told of the turn
// before it is durable), tool calls are run and each result committed as it completes, until a
// final answer, committed with the turn's end, or the iteration budget. The turn holds a lease that the one
// scheduler renews; a crash leaves the turn "running" with an expired lease and a transcript to
// resume from. One abort stops everything of the turn: the model call (auxiliary ones included),
// the tools, their processes, and subagents.
import { describeSnapshot } from "../checkpoints/describe.js";
import type { SnapshotResult } from "../checkpoints/store.js";
import type { Deps } from "../core/deps.js";
import type { TenaxError } from "../core/errors.js";
import { heldUntil } from "../core/held-until.js";
import { newId } from "../core/ids.js";
import type { Redactor } from "../core/redact.js";
import { ProviderError } from "../llm/classified-error.js";
import type { Completion } from "../llm/model-call.js";
import type { ToolSpec } from "../llm/provider.js";
import type { RouteEvent } from "../llm/route-events.js";
import type { ModelRouter, TurnRoute } from "../llm/router.js";
import { isLeaseLost } from "../store/lease-fence.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { traceTurn } from "./agent-trace.js";
import type { CompressionEvent } from "./compression.js";
import { Guardrails } from "./guardrails.js";
import { buildHistory, COMPACTION_KIND, type Compaction, MARKER_ROLE } from "./history.js";
import type { Scheduler } from "./scheduler.js";
import { runToolCall } from "./tool-call.js";
import type { ToolSummary } from "./tool-summary.js";
import type { ApprovalChannel, Tool, ToolEvent, TurnToolContext } from "./tools/types.js";
import {
  type GuardrailCode,
  guardrailFailure,
  interruptFailure,
  type OverflowState,
  type TurnFailure,
  TurnInterrupt,
  thrownFailure,
} from "./turn-failure.js";
import type { ProgressEvent, TurnProgress } from "./turn-progress.js";
import { callSettings, type TurnRequest, turnSystem } from "./turn-request.js";
import { type ResumePoint, restartTurn, settleOpenCalls } from "./turn-resume.js";
import { usageOp } from "./usage.js";

export type TurnStatus = "completed" | "interrupted" | "failed";

export type AgentEvent =
  | RouteEvent
  | ToolEvent
  | { type: "turn_started"; session_id: string; turn_id: string }
  | { type: "tool_started"; turn_id: string; id: string; name: string; arguments: string }
  | {
      type: "tool_finished";
      turn_id: string;
      id: string;
      name: string;
      ok: boolean;
      ms: number;
      /** The result in a few words ("12 lines", "exit 1: ..."), for people watching. */
      summary: ToolSummary;
    }
  | { type: "guardrail"; layer: "guardrails"; message: string }
  | { type: "continuation"; turn_id: string; count: number }
  | {
      type: "turn_finished";
      turn_id: string;
      status: TurnStatus;
      partial: boolean;
      error: string | null;
      failure: TurnFailure | null;
    }
  | { type: "checkpoint"; layer: "checkpoints"; project: string; result: SnapshotResult; message: string }
  | { type: "checkpoint_failed"; layer: "checkpoints"; message: string }
  | CompressionEvent
  | ProgressEvent;

/** What the turn needs from context compression (src/agent/compression.ts implements it). */
export interface TurnCompressor {
  needed(input: {
    transcript: Awaited<ReturnType<StorePort["getMessages"]>>;
    compaction: Compaction | null;
    system: string | null;
    window: number;
    lastInputTokens: number | null;
  }): boolean;
  compress(
    input: {
      sessionId: string;
      turnId: string | null;
      leaseEpoch?: number;
      transcript: Awaited<ReturnType<StorePort["getMessages"]>>;
      compaction: Compaction | null;
      system: string | null;
      window: number;
      lastInputTokens: number | null;
      reason: "threshold" | "overflow" | "manual";
      signal: AbortSignal;
      /** This call's own listener (`/compress`), besides the compressor's. */
      onEvent?: (event: CompressionEvent) => void;
    },
    turn: { attempts: number; overflowBypassUsed: boolean },
  ): Promise<Compaction | null>;
}

export interface TurnLimits {
  max_iterations: number;
  max_continuations: number;
  identical_call_limit: number;
  failing_call_limit: number;
  lease_seconds: number;
}

export interface TurnDeps {
  store: StorePort;
  router: ModelRouter;
  tools: readonly Tool[];
  scheduler: Scheduler;
  deps: Deps;
  limits: TurnLimits;
  system: string | null;
  /** Kills every process a task owns (the process registry). */
  cleanupTask(taskId: string): Promise<unknown>;
  /** Snapshot a project before the turn's first change there (checkpoints); null when off. */
  checkpoint: ((dir: string, reason: string) => Promise<SnapshotResult>) | null;
  compressor: TurnCompressor | null;
  /** The profile's secrets, redacted from every tool result before the model or the store sees it. */
  redactor?: Redactor;
  /** Window used when config does not list the primary model's. */
  defaultWindow?: number;
  /**
   * Whether this call of the turn waits on a pending approval (nothing of it ran): a resumed turn
   * runs it again, to wait on the same record.
   */
  awaitsApproval?: (sessionId: string, turnId: string, callId: string) => Promise<boolean>;
  /** The process's progress tracker (stalls, the deadline, stop requests); none: the turn is not watched. */
  progress?: TurnProgress | null;
  /** The lease owner this process's turns are written with (core/owners.ts); `pid:N` when left out. */
  turnOwner?: string;
  /** Now, in the clock leases are written in (core/owners.ts leaseNow); the local clock when left out. */
  leaseNow?: () => number;
  /** Bytes the task's processes have written so far (their output is a tool's progress). */
  taskOutput?: (taskId: string) => number;
  /**
   * Told of a turn this process gave up on with its row still marked running (its end could not
   * be written: the store refused it), so the turn's session is not held until its lease runs out.
   */
  abandoned?: (turnId: string) => void;
}

export interface TurnInput {
  sessionId: string;
  text: string;
  cwd: string;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  /** The owner of processes the turn's tools start; defaults to the turn id. */
  taskId?: string;
  /** The routing state, when a caller keeps one across calls; a new turn starts on the primary. */
  route?: TurnRoute;
  /**
   * Go on with this interrupted turn (same id) from its last saved message instead of starting
   * one with `text` (then unused): see src/agent/turn-resume.ts.
   */
  resume?: {
    turnId: string;
    /** Where it goes on from, when the caller has taken it over already (`Agent.takeOver`). */
    point?: ResumePoint;
  };
  /** Writes committed with the turn's start, before it (a new session and its history). */
  before?: readonly WriteOp[];
  /**
   * When the caller first tells anyone of the turn. "start" (the default): before the model
   * answers (a run, a chat-platform message, a cron occurrence, a stream), so the question is
   * durable before the turn is told. "answer": by the answer alone (a chat completion not
   * streamed), so the question is committed first but becomes durable with the turn's end, in its
   * one sync; a crash before that leaves the caller with a broken connection and nothing told.
   */
  acknowledgedBy?: "start" | "answer";
  /** Writes committed with a completed turn's end, given its whole reply (a conversation's hash). */
  endWrites?: (reply: string) => Promise<readonly WriteOp[]>;
  /** What the caller asks of every model call of this turn (an API client's system text, cap, sampling). */
  request?: TurnRequest;
  /**
   * Who can approve a command the exec policy holds back (the runs API, the chat); without one,
   * such a command is denied at once and the model reads why.
   */
  approvals?: ApprovalChannel | null;
  /** False when the caller keeps its own deadline (cron's --timeout): agent.turn_deadline does not apply. */
  deadline?: boolean;
}

export interface TurnResult {
  session_id: string;
  turn_id: string;
  status: TurnStatus;
  /** The final answer (continuations joined); what was said so far when the turn did not complete. */
  reply: string;
  /** True when the reply was cut (output limit after the allowed continuations, or the turn stopped). */
  partial: boolean;
  /** The provider's own finish reason of the last call, unchanged. */
  finish_reason: string | null;
  /** The failure's message, for people; null when the turn completed. */
  error: string | null;
  /** Why the turn did not complete, as a value (code, layer, next step); null when it completed. */
  failure: TurnFailure | null;
  iterations: number;
  usage: { input_tokens: number; output_tokens: number };
  model: { provider: string; model: string } | null;
}

/** The user message Tenax adds to continue a reply the output limit cut. */
export const CONTINUE_PROMPT =
  "Continue exactly where your last message stopped, without repeating anything.";
export const CONTINUE_NAME = "tenax-continue";

class TurnHalted extends Error {
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

/** Run one turn (above), as one trace: every model call, tool, compression and commit of it nests under its span. */
export function runTurn(agent: TurnDeps, input: TurnInput): Promise<TurnResult> {
  return traceTurn(input, () => runTurnNow(agent, input));
}

async function runTurnNow(agent: TurnDeps, input: TurnInput): Promise<TurnResult> {
  const { store, deps, limits } = agent;
  const leaseMs = limits.lease_seconds * 1000;
  const leaseNow = agent.leaseNow ?? (() => deps.clock.now());
  // A takeover another process won throws lease_lost here: nothing of the turn runs.
  const resumed = input.resume
    ? (input.resume.point ??
      (await restartTurn(store, input.sessionId, input.resume.turnId, leaseMs, leaseNow(), agent.turnOwner)))
    : null;
  // Persist before publish: the question is committed with its turn before the model is asked
  // (the transcript holds it), and durable before anyone is told of the turn or any tool runs. Its
  // sync runs while the model answers; the turn's events wait for it.
  let turnId: string;
  /** The lease epoch this process holds: every write of the turn for itself carries it. */
  let epoch: number;
  let durable: Promise<unknown> = Promise.resolve();
  if (resumed) {
    turnId = resumed.turnId;
    epoch = resumed.epoch;
  } else {
    const begun = store.beginTurn({
      sessionId: input.sessionId,
      leaseMs,
      ...(agent.turnOwner === undefined ? {} : { owner: agent.turnOwner }),
      question: { role: "user", content: input.text },
      ...(input.before === undefined ? {} : { before: input.before }),
      leaseNow: leaseNow(),
      durableWithNext: input.acknowledgedBy === "answer",
    });
    await begun.applied;
    turnId = begun.id;
    epoch = begun.epoch;
    durable = begun.durable;
  }
  const tell = heldUntil(durable, safe(input.onEvent), {
    type: "turn_started",
    session_id: input.sessionId,
    turn_id: turnId,
  });
  const taskId = input.taskId ?? turnId;

  const controller = new AbortController();
  // Every event the turn emits is progress; an approval asked for is a wait for a person, not a stall.
  const tracked =
    agent.progress?.begin({
      sessionId: input.sessionId,
      turnId,
      deadline: input.deadline !== false,
      emit: (event) => tell(event),
      stop: (reason) => controller.abort(reason),
      ...(agent.taskOutput ? { outputBytes: () => agent.taskOutput?.(taskId) ?? 0 } : {}),
    }) ?? null;
  const emit = (event: AgentEvent) => {
    if (event.type === "approval_requested") tracked?.enter("approval");
    else if (event.type === "approval_decided") tracked?.enter("tool");
    else tracked?.progress();
    tell(event);
  };
  // A start that cannot be made durable stops the turn; runTurn then throws its error.
  durable.catch((error: unknown) => controller.abort(error));
  const onAbort = () => controller.abort(input.signal?.reason);
  if (input.signal?.aborted) controller.abort(input.signal.reason);
  else input.signal?.addEventListener("abort", onAbort, { once: true });
  const signal = controller.signal;

  let ended = false;
  const heartbeat = agent.scheduler.every(
    `lease ${turnId}`,
    Math.max(1000, Math.floor(leaseMs / 3)),
    async () => {
      if (ended) return false;
      try {
        await store.updateTurn({
          id: turnId,
          heartbeat_at: deps.clock.now(),
          lease_expires_at: leaseNow() + leaseMs,
          lease_epoch: epoch,
        });
      } catch (error) {
        // Another process took the turn over: this one stops at once (no further tool runs).
        if (!isLeaseLost(error)) throw error;
        controller.abort(lostLease(error));
        return false;
      }
      return true;
    },
  );

  const route = input.route ?? agent.router.turn();
  const guard = new Guardrails(limits);
  const specs: ToolSpec[] = agent.tools.map((t) => t.spec);
  const byName = new Map(agent.tools.map((t) => [t.spec.name, t]));
  const snapshotted = new Map<string, Promise<unknown>>();
  const compression = { attempts: 0, overflowBypassUsed: false };
  const replyParts: string[] = [];
  const usage = { input_tokens: 0, output_tokens: 0 };
  let lastInputTokens: number | null = null;
  let finishReason: string | null = null;
  let partial = false;
  let iterations = 0;
  let continuations = 0;
  let status: TurnStatus = "completed";
  let failure: TurnFailure | null = null;
  /** Set once the provider said the context is too long this turn. */
  let overflow: OverflowState | null = null;
  let model: TurnResult["model"] = null;
  /** The final answer, committed with the turn's end (one durable commit fewer per turn). */
  let answer: WriteOp | null = null;

  const context: TurnToolContext = {
    signal,
    sessionId: input.sessionId,
    turnId,
    leaseEpoch: epoch,
    taskId,
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

  const window = () => agent.router.limits(route.target)?.context_window ?? agent.defaultWindow ?? 128_000;
  const system = turnSystem(agent.system, input.request);
  const settings = callSettings(input.request);
  const ask = (view: TranscriptView) =>
    callModel(route, { system, compaction: view.compaction, transcript: view.transcript }, settings, specs, {
      signal,
      emit,
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
    const sizes = { ...view, system, window: window(), lastInputTokens };
    if (reason === "threshold" && !agent.compressor.needed(sizes)) return false;
    // Compression tells of itself: not before the turn is durable and told.
    await durable;
    tracked?.enter("compression");
    const made = await agent.compressor.compress(
      { ...sizes, sessionId: input.sessionId, turnId, leaseEpoch: epoch, reason, signal },
      compression,
    );
    tracked?.enter("provider");
    if (made) lastInputTokens = null;
    return made !== null;
  };

  try {
    if (resumed) {
      tracked?.enter("tool");
      const halt = await settleOpenCalls(
        store,
        input.sessionId,
        resumed,
        byName,
        (call) => runToolCall(agent, byName, guard, call, context, emit),
        async (call) => (await agent.awaitsApproval?.(input.sessionId, turnId, call.id)) === true,
      );
      if (halt) throw new TurnHalted("identical_call_limit", halt);
    }
    for (;;) {
      if (signal.aborted) throw signal.reason;
      if (iterations >= limits.max_iterations) {
        throw new TurnHalted(
          "max_iterations",
          `stopped: the turn reached its budget of ${limits.max_iterations} model calls (agent.max_iterations)`,
        );
      }
      iterations++;
      let view = await readView();
      if (await compressIfNeeded("threshold", view)) view = await readView();
      let completion: Completion;
      tracked?.enter("provider");
      try {
        completion = await ask(view);
      } catch (e) {
        // The provider itself said the context is too long: one bounded compression, then again.
        if (!isOverflow(e) || signal.aborted) throw e;
        overflow = { compressed: false };
        if (!(await compressIfNeeded("overflow", await readView()))) throw e;
        overflow.compressed = true;
        completion = await ask(await readView());
      }
      model = { provider: completion.provider, model: completion.model };
      finishReason = completion.finish_reason;
      lastInputTokens = completion.usage?.input_tokens ?? null;
      usage.input_tokens += completion.usage?.input_tokens ?? 0;
      usage.output_tokens += completion.usage?.output_tokens ?? 0;
      const calls = completion.tool_calls;
      const said = store.messageOp({
        session_id: input.sessionId,
        role: "assistant",
        content: completion.text === "" && calls.length > 0 ? null : completion.text,
        tool_calls: calls.length > 0 ? calls : null,
        turn_id: turnId,
        lease_epoch: epoch,
      });
      const cut = cutByOutputLimit(completion.finish_reason);
      // A cap the caller set is what it asked for: a reply it cuts is not continued past it.
      const continues =
        calls.length === 0 &&
        cut &&
        settings.max_output_tokens === undefined &&
        continuations < limits.max_continuations;
      // A reply that ends the turn is committed with the turn's end; anything else goes on from
      // this message (a tool call, a continuation), so it is committed now.
      if (calls.length === 0 && !continues) answer = said;
      else await store.write([said]);

      if (calls.length === 0) {
        replyParts.push(completion.text);
        if (cut) {
          if (continues) {
            continuations++;
            emit({ type: "continuation", turn_id: turnId, count: continuations });
            await store.appendMessage({
              session_id: input.sessionId,
              role: "user",
              content: CONTINUE_PROMPT,
              name: CONTINUE_NAME,
              turn_id: turnId,
              lease_epoch: epoch,
            });
            continue;
          }
          partial = true;
        }
        break;
      }
      // Nothing with side effects before the turn's start is durable.
      await durable;
      tracked?.enter("tool");
      for (const call of calls) {
        if (signal.aborted) throw signal.reason;
        const halt = await runToolCall(agent, byName, guard, call, context, emit);
        if (halt) throw new TurnHalted("identical_call_limit", halt);
      }
    }
  } catch (e) {
    partial = true;
    if (isLeaseLost(e) && !signal.aborted) controller.abort(lostLease(e));
    if (signal.aborted) {
      failure = interruptFailure(signal.reason);
      // A turn ended by its deadline failed: nobody asked for it to stop.
      status = failure.code === "turn_deadline" ? "failed" : "interrupted";
    } else if (e instanceof TurnHalted) {
      status = "failed";
      failure = guardrailFailure(e.code, e.message);
      emit({ type: "guardrail", layer: "guardrails", message: e.message });
    } else {
      status = "failed";
      // An unexpected error's own words go to clients and the log: no secret in them either.
      failure = redactedFailure(thrownFailure(e, overflow), agent.redactor);
    }
  } finally {
    ended = true;
    heartbeat.cancel();
    await tracked?.end();
    input.signal?.removeEventListener("abort", onAbort);
    // The task's processes never outlive it, whether it completed, failed or was interrupted.
    await agent.cleanupTask(taskId).catch(() => {});
  }

  // A turn whose start never became durable was never stored: its error is the turn's.
  await durable.catch((e: unknown) => {
    agent.abandoned?.(turnId);
    throw e;
  });
  if (failure?.code !== "lease_lost") {
    try {
      const reply = replyParts.join("");
      await endTurn(agent, input, { turnId, epoch, status, failure, answer, usage, reply });
    } catch (e) {
      // The turn was taken over while it ran: its answer and end were refused; the other owner ends it.
      if (!isLeaseLost(e)) {
        agent.abandoned?.(turnId);
        throw e;
      }
      status = "interrupted";
      failure = interruptFailure(lostLease(e));
    }
  }
  const lost = failure?.code === "lease_lost";
  const error = failure?.message ?? null;
  if (lost) partial = true;
  emit({ type: "turn_finished", turn_id: turnId, status, partial, error, failure });
  return {
    session_id: input.sessionId,
    turn_id: turnId,
    status,
    // Nothing of a taken-over turn's answer was stored: it is not this process's to tell.
    reply: lost ? "" : replyParts.join(""),
    partial,
    finish_reason: finishReason,
    error,
    failure,
    iterations,
    usage,
    model,
  };
}

/** What the turn's end writes: how it ended, and the final answer when it has one. */
interface TurnEnd {
  turnId: string;
  epoch: number;
  status: TurnStatus;
  failure: TurnFailure | null;
  answer: WriteOp | null;
  usage: { input_tokens: number; output_tokens: number };
  /** The whole reply, for the caller's end writes. */
  reply: string;
}

/**
 * Commit the turn's end, fenced by its lease epoch: its marker when it did not complete, then the
 * final answer, the caller's end writes, the session's usage and the turn's row together (one
 * durable commit: the turn's one sync when its caller acknowledges it by its answer).
 */
async function endTurn(agent: TurnDeps, input: TurnInput, end: TurnEnd): Promise<void> {
  const { store, deps } = agent;
  const { turnId, epoch, status, failure, answer, usage } = end;
  const error = failure?.message ?? null;
  if (failure !== null) {
    await store
      .appendMessage({
        session_id: input.sessionId,
        role: MARKER_ROLE,
        content: status === "interrupted" ? failure.message : `turn failed: ${failure.message}`,
        turn_id: turnId,
        lease_epoch: epoch,
      })
      .catch(() => {});
  }
  const now = deps.clock.now();
  // The final answer, the session's usage and the turn's end commit together: one durable commit.
  // Usage is best effort: a usage record that cannot be read or written never keeps the turn open.
  const ended: WriteOp = {
    op: "turn.update",
    id: turnId,
    status,
    ended_at: now,
    heartbeat_at: now,
    lease_owner: null,
    lease_expires_at: null,
    error,
    lease_epoch: epoch,
  };
  let usageWrite: WriteOp | null = null;
  if (usage.input_tokens + usage.output_tokens > 0) {
    try {
      usageWrite = await usageOp(store, input.sessionId, usage, now);
    } catch {
      // An unreadable usage record never keeps the turn from ending.
    }
  }
  let extra: readonly WriteOp[] = [];
  if (status === "completed" && input.endWrites !== undefined) {
    try {
      extra = await input.endWrites(end.reply);
    } catch {
      // The caller's own bookkeeping (a conversation's hash) never keeps the turn from ending.
    }
  }
  const saved = answer === null ? [] : [answer];
  const whole = [...saved, ...extra, ...(usageWrite === null ? [] : [usageWrite]), ended];
  if (whole.length === saved.length + 1) await store.write(whole);
  else
    await store
      .write(whole)
      .catch((e: unknown) => (isLeaseLost(e) ? Promise.reject(e) : store.write([...saved, ended])));
}

/** The abort reason of a turn another process took over. */
function lostLease(error: TenaxError): TurnInterrupt {
  return new TurnInterrupt("lease_lost", `another process took this turn over (${error.message})`);
}

interface TranscriptView {
  transcript: Awaited<ReturnType<StorePort["getMessages"]>>;
  compaction: Compaction | null;
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

/** A failure's words for people, with the profile's secrets redacted (the classified error is already). */
function redactedFailure(failure: TurnFailure, redactor: Redactor | undefined): TurnFailure {
  if (redactor === undefined) return failure;
  return {
    ...failure,
    message: redactor.redactMessage(failure.message),
    next: redactor.redactMessage(failure.next),
  };
}

function isOverflow(error: unknown): boolean {
  return error instanceof ProviderError && error.classified.compress;
}

function safe(listener: ((event: AgentEvent) => void) | undefined): (event: AgentEvent) => void {
  if (!listener) return () => {};
  return (event) => {
    try {
      listener(event);
    } catch {
      // A broken listener never breaks a turn.
    }
  };
}

/** A new id for a subagent's task, time-sortable like every other id. */
export function newTaskId(now: number): string {
  return newId("task_", now);
}
