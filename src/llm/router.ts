// Which model answers: the primary, or once per turn the fallback chain when the primary's keys and
// retries are spent on a reason that allows it; and for side tasks (compression, title, vision) their
// own chain, skipping any model whose context window cannot hold the task. Every move is an event.
import type { Deps } from "../core/deps.js";
import { TenaxError } from "../core/errors.js";
import { tracingOn } from "../core/trace.js";
import type { CircuitBreakers } from "./breaker.js";
import { traceModelCall } from "./call-trace.js";
import { ProviderError } from "./classified-error.js";
import {
  type CallSettings,
  type Completion,
  callTarget,
  type ModelLimits,
  type ProviderRuntime,
} from "./model-call.js";
import type { ChatRequest } from "./provider.js";
import { withRequestFix } from "./request-fixes.js";
import { giveUpReason } from "./retry.js";
import {
  type AuxiliaryTask,
  type CallOutcome,
  type RouteListener,
  type StatusEvent,
  safeListener,
  type Target,
} from "./route-events.js";
import { estimateTokens } from "./tokens.js";
import { ToldReply } from "./told-reply.js";

/** A request without its model: the router picks the model. */
export type RouteRequest = Omit<ChatRequest, "model">;

export interface AuxiliaryRoute {
  chain: Target[];
  /** Each candidate's whole call (retries included) must end within this. */
  timeout_ms: number;
}

export interface RouterOptions {
  providers: ReadonlyMap<string, ProviderRuntime>;
  primary: Target;
  fallback: readonly Target[];
  auxiliary: Partial<Record<AuxiliaryTask, AuxiliaryRoute>>;
  deps: Deps;
  maxAttempts: number;
  maxRetryAfterMs?: number;
  /** Sees every status event of every call, besides each call's own listener (for health and logs). */
  onStatus?: (event: StatusEvent) => void;
  /** Told how every call to a target ended, success or classified failure (for provider health). */
  onOutcome?: (outcome: CallOutcome) => void;
  /**
   * Each model's circuit breaker: an open one is skipped without spending the retry budget (the
   * turn moves along the fallback chain, or fails with `circuit_open`). None: every call goes.
   */
  breaker?: CircuitBreakers;
}

export interface RouteOptions {
  signal?: AbortSignal;
  onEvent?: RouteListener;
  /**
   * The listener cannot take back any of the reply it was told (an OpenAI client assembling a
   * stream): after a stream breaks mid-reply, a retry or another model may only go on from what it
   * has, or the call fails with `reply_diverged` (told-reply.ts). Otherwise the listener is told
   * to drop it (`stream_restart`, `fallback`) and gets the new attempt whole.
   */
  appendOnly?: boolean;
}

/** Output reserved for a side task whose request does not say, when the model's limit is unknown. */
const DEFAULT_AUX_OUTPUT_TOKENS = 4096;

export class ModelRouter {
  private readonly settings: CallSettings;

  constructor(private readonly options: RouterOptions) {
    for (const target of [options.primary, ...options.fallback, ...auxTargets(options.auxiliary)]) {
      if (!options.providers.has(target.provider)) {
        throw new RangeError(`no runtime for provider '${target.provider}' (model ${target.model})`);
      }
    }
    this.settings = {
      deps: options.deps,
      maxAttempts: options.maxAttempts,
      ...(options.maxRetryAfterMs === undefined ? {} : { maxRetryAfterMs: options.maxRetryAfterMs }),
      ...(options.breaker ? { breaker: options.breaker } : {}),
    };
  }

  /** The models' circuit breakers, when the router has them. */
  get breaker(): CircuitBreakers | null {
    return this.options.breaker ?? null;
  }

  get primary(): Target {
    return this.options.primary;
  }

  /** Limits of a model when config lists them. */
  limits(target: Target): ModelLimits | null {
    return this.runtime(target).models[target.model] ?? null;
  }

  runtime(target: Target | string): ProviderRuntime {
    const name = typeof target === "string" ? target : target.provider;
    const runtime = this.options.providers.get(name);
    if (!runtime) throw new RangeError(`no runtime for provider '${name}'`);
    return runtime;
  }

  /** The target's circuit as its breaker last recorded it (the model call's span), or null. */
  private async circuitState(target: Target): Promise<string | null> {
    const breaker = this.options.breaker;
    if (!breaker) return null;
    return (
      (await breaker.circuits([target])).find(
        (c) => c.provider === target.provider && c.model === target.model,
      )?.circuit ?? null
    );
  }

  /** Every provider runtime, for status reports. */
  runtimes(): ProviderRuntime[] {
    return [...this.options.providers.values()];
  }

  /** Routing state for one turn, starting on `start` (the primary unless a chat chose another model). */
  turn(start: Target = this.options.primary): TurnRoute {
    this.runtime(start);
    return new TurnRoute(this, start);
  }

  /** One call to one target with the pool, limiter and retries; the building block of both routes. */
  async call(
    target: Target,
    request: RouteRequest,
    options: RouteOptions & {
      contextTokens: number;
      told?: ToldReply;
      /** This call is the turn's fallback (for its span). */
      fallback?: { from: Target; reason: string };
    },
  ): Promise<Completion> {
    // The model's configured output budget, unless the caller set one (a side task's own budget):
    // without it the Anthropic client would fall back to its default and cut long replies short.
    const output = this.limits(target)?.max_output_tokens;
    const sent =
      request.max_output_tokens === undefined && output !== undefined
        ? { ...request, max_output_tokens: output }
        : request;
    const runtime = this.runtime(target);
    // Read only for a span that goes somewhere: with tracing off it costs no store read.
    const circuitState = tracingOn() ? await this.circuitState(target) : undefined;
    const span = traceModelCall({
      target,
      system: runtime.system,
      contextTokens: options.contextTokens,
      maxOutputTokens: sent.max_output_tokens,
      fallback: options.fallback,
      circuitState,
    });
    const emit = span.listener(this.listener(options.onEvent));
    const reply = options.told ?? new ToldReply(options.appendOnly === true);
    const once = (changed: RouteRequest) =>
      callTarget(runtime, target, changed, this.settings, {
        ...(options.signal ? { signal: options.signal } : {}),
        onEvent: emit,
        contextTokens: options.contextTokens,
        told: reply,
      });
    // A failure one change to the request clears (request-fixes.ts) is sent once more, changed.
    const called = withRequestFix(sent, once, (fix, failure) =>
      emit({
        type: "request_fixed",
        layer: "retry",
        provider: target.provider,
        model: target.model,
        reason: failure.classified.reason,
        status: failure.classified.status,
        message: `${target.provider}/${target.model}: ${failure.classified.reason}: ${fix.does}`,
      }),
    ).then(
      (completion) => {
        span.succeeded(completion);
        return completion;
      },
      (error: unknown) => {
        span.failed(error, options.signal?.aborted === true);
        throw error;
      },
    );
    const report = this.options.onOutcome;
    if (!report) return called;
    const told = (outcome: CallOutcome) => {
      try {
        report(outcome);
      } catch {
        // Health bookkeeping must never break the call it watches.
      }
    };
    const { provider, model } = target;
    return called.then(
      (completion) => {
        told({ provider, model, at: this.options.deps.clock.now(), ok: true });
        return completion;
      },
      (error: unknown) => {
        // The caller's own abort says nothing of the provider; anything not a ProviderError is ours;
        // a call its open circuit refused sent nothing (the breaker's record says it).
        if (
          error instanceof ProviderError &&
          !options.signal?.aborted &&
          error.classified.reason !== "circuit_open"
        )
          told({ provider, model, at: this.options.deps.clock.now(), ok: false, error: error.classified });
        throw error;
      },
    );
  }

  get fallbackChain(): readonly Target[] {
    return this.options.fallback;
  }

  /** A listener that reports to the call's own listener and to the router-wide status listener. */
  listener(own: RouteListener | undefined): RouteListener {
    const call = safeListener(own);
    const status = this.options.onStatus;
    if (!status) return call;
    const statusSafe = safeListener((e) => {
      if ("layer" in e) status(e);
    });
    return (event) => {
      call(event);
      statusSafe(event);
    };
  }

  /**
   * Run a side task on its chain: the first candidate whose window holds the input plus the output
   * budget, each within the task's timeout; null (with an `auxiliary_exhausted` warning) when none
   * could. A task with no chain configured runs on the primary model.
   */
  async auxiliary(
    task: AuxiliaryTask,
    request: RouteRequest,
    options: RouteOptions = {},
  ): Promise<Completion | null> {
    const emit = this.listener(options.onEvent);
    const route = this.options.auxiliary[task] ?? { chain: [this.options.primary], timeout_ms: 120_000 };
    const input = estimateTokens(request.messages, request.tools);
    const tried: Array<Target & { why: "context_window" | "failed" }> = [];
    for (const candidate of route.chain) {
      const limits = this.limits(candidate);
      const output = request.max_output_tokens ?? limits?.max_output_tokens ?? DEFAULT_AUX_OUTPUT_TOKENS;
      const needed = input + output;
      const window = limits?.context_window ?? null;
      const name = `${candidate.provider}/${candidate.model}`;
      if (window !== null && window < needed) {
        tried.push({ ...candidate, why: "context_window" });
        emit({
          type: "auxiliary_skipped",
          layer: "auxiliary",
          task,
          candidate,
          why: "context_window",
          context_window: window,
          needed_tokens: needed,
          reason: null,
          message: `${task}: skipped ${name}: its context window of ${window} tokens cannot hold ${input} tokens of input plus ${output} of output`,
        });
        continue;
      }
      emit({
        type: "auxiliary_routed",
        layer: "auxiliary",
        task,
        candidate,
        context_window: window,
        needed_tokens: needed,
        message:
          window === null
            ? `${task}: using ${name}; its context window is not in config, so the size of ${needed} tokens is unchecked`
            : `${task}: using ${name} (${needed} of ${window} tokens)`,
      });
      const deadline = AbortSignal.timeout(route.timeout_ms);
      const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
      try {
        return await this.call(
          candidate,
          { ...request, max_output_tokens: output },
          {
            signal,
            contextTokens: input,
            ...(options.onEvent ? { onEvent: options.onEvent } : {}),
          },
        );
      } catch (error) {
        if (options.signal?.aborted) throw error;
        const reason = deadline.aborted ? "timeout" : reasonOf(error);
        tried.push({ ...candidate, why: "failed" });
        emit({
          type: "auxiliary_skipped",
          layer: "auxiliary",
          task,
          candidate,
          why: "failed",
          context_window: window,
          needed_tokens: needed,
          reason,
          message: `${task}: ${name} failed (${reason}${
            deadline.aborted ? ` after the task's ${route.timeout_ms} ms timeout` : ""
          }): ${messageOf(error)}`,
        });
      }
    }
    emit({
      type: "auxiliary_exhausted",
      layer: "auxiliary",
      task,
      tried,
      message: `${task}: skipped; no model of its chain could do it (${
        tried.map((t) => `${t.provider}/${t.model}: ${t.why}`).join(", ") || "the chain is empty"
      })`,
    });
    return null;
  }
}

/**
 * One turn's routing. It starts on the primary. When a call gives up on a reason that allows it,
 * the turn moves along the fallback chain, once: it stays on the model that answered for the rest
 * of the turn, and a later failure there is not a second fallback. The next turn (a new TurnRoute)
 * starts on the primary again.
 */
export class TurnRoute {
  private active: Target;
  private fellBack = false;

  constructor(
    private readonly router: ModelRouter,
    start: Target = router.primary,
  ) {
    this.active = start;
  }

  /** The model the turn's next call goes to. */
  get target(): Target {
    return this.active;
  }

  get fallenBack(): boolean {
    return this.fellBack;
  }

  async complete(request: RouteRequest, options: RouteOptions = {}): Promise<Completion> {
    const emit = this.router.listener(options.onEvent);
    const contextTokens = estimateTokens(request.messages, request.tools);
    // One account of what the listener has, whichever model ends up answering.
    const told = new ToldReply(options.appendOnly === true);
    const callOptions = { ...options, contextTokens, told };
    let failure: unknown;
    try {
      return await this.router.call(this.active, request, callOptions);
    } catch (error) {
      if (this.fellBack || !mayFallBack(error) || this.router.fallbackChain.length === 0) throw error;
      failure = error;
    }
    this.fellBack = true;
    const from = this.active;
    const tried: Array<Target & { reason: ProviderError["classified"]["reason"] }> = [
      { ...from, reason: reasonOf(failure) },
    ];
    for (const candidate of this.router.fallbackChain) {
      if (sameTarget(candidate, from)) continue;
      const window = this.router.limits(candidate)?.context_window ?? null;
      if (window !== null && window < contextTokens) {
        emit({
          type: "fallback_skipped",
          layer: "fallback",
          candidate,
          context_window: window,
          needed_tokens: contextTokens,
          message: `fallback: skipped ${candidate.provider}/${candidate.model}: its context window of ${window} tokens cannot hold the conversation (${contextTokens} tokens)`,
        });
        continue;
      }
      emit({
        type: "fallback",
        layer: "fallback",
        from,
        to: candidate,
        reason: reasonOf(failure),
        discard_chars: told.begin(),
        message: `falling back from ${from.provider}/${from.model} to ${candidate.provider}/${candidate.model} for the rest of this turn: ${messageOf(failure)}`,
      });
      try {
        const completion = await this.router.call(candidate, request, {
          ...callOptions,
          fallback: { from, reason: reasonOf(failure) },
        });
        this.active = candidate;
        return completion;
      } catch (error) {
        if (!mayFallBack(error)) throw error;
        failure = error;
        tried.push({ ...candidate, reason: reasonOf(error) });
      }
    }
    emit({
      type: "fallback_exhausted",
      layer: "fallback",
      tried,
      message: `every model of the fallback chain failed this turn (${tried
        .map((t) => `${t.provider}/${t.model}: ${t.reason}`)
        .join(", ")})`,
    });
    if (TenaxError.isInstance(failure)) failure.data.fallback_tried = tried;
    throw failure;
  }
}

/** A failure another model may not have: the classifier said so, and it was not our own abort. */
function mayFallBack(error: unknown): boolean {
  return error instanceof ProviderError && error.classified.fallback && giveUpReason(error) !== "aborted";
}

function reasonOf(error: unknown): ProviderError["classified"]["reason"] {
  return error instanceof ProviderError ? error.classified.reason : "unknown";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sameTarget(a: Target, b: Target): boolean {
  return a.provider === b.provider && a.model === b.model;
}

function auxTargets(auxiliary: RouterOptions["auxiliary"]): Target[] {
  return Object.values(auxiliary).flatMap((route) => route?.chain ?? []);
}
