// Context compression as its own dependency of the turn loop: when a request grows past the
// threshold of the primary window (or the provider said it overflowed), the middle of the
// conversation is summarized by the auxiliary compression chain, or, with no summarizer able to
// take it, dropped with a visible marker. Failures cool the summarizer down (kept in the store),
// attempts per turn are bounded, and passes that save little pause automatic compression.

import type { CompressionSettings } from "../config/schema.js";
import type { Deps } from "../core/deps.js";
import type { Completion } from "../llm/model-call.js";
import type { RouteEvent, RouteListener, Target } from "../llm/route-events.js";
import type { ModelRouter } from "../llm/router.js";
import { estimateTokens } from "../llm/tokens.js";
import type { RecordPutOp, WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import type { MessageView } from "../store/rows.js";
import { compressionSpanEvent, traceCompression } from "./agent-trace.js";
import { type CompressionPlan, planCompaction, summaryRequest } from "./compression-plan.js";
import {
  type CompressionCooldown,
  cooldownOp,
  nextCooldown,
  pauseOp,
  readCooldown,
  readPause,
} from "./compression-state.js";
import { buildHistory, COMPACTION_KIND, type Compaction, MARKER_ROLE } from "./history.js";

export type { CompressionSettings } from "../config/schema.js";

/** threshold: the request grew past it; overflow: the provider refused it as too long; manual: /compress. */
export type CompressionReason = "threshold" | "overflow" | "manual";

/** Why a call did nothing. */
export type CompressionSkipWhy =
  | "disabled"
  | "budget"
  | "paused"
  | "cooldown"
  | "nothing_to_compress"
  | "no_saving";

interface EventBase {
  layer: "compression";
  session_id: string;
  turn_id: string | null;
  reason: CompressionReason;
  /** For people: what happened and why. */
  message: string;
}

/** Token figures are Tenax's estimate of the model's view (system prompt included). */
export type CompressionEvent = EventBase &
  (
    | {
        type: "compression_started";
        tokens_before: number;
        window: number;
        /** Messages the middle will hold, and its seq range. */
        messages: number;
        first_seq: number;
        last_seq: number;
        /** True when a provider-proven overflow goes through the summarizer's cooldown. */
        cooldown_bypassed: boolean;
      }
    | {
        type: "compression_done";
        tokens_before: number;
        tokens_after: number;
        messages: number;
        first_seq: number;
        last_seq: number;
        summary_tokens: number;
        /** provider/model of the summarizer. */
        model: string;
        /** Set when the pass saved less than min_saving: automatic compression waits until then. */
        paused_until: number | null;
      }
    | {
        type: "compression_failed";
        why: "summarizer_failed" | "empty_summary" | "store";
        error: string;
        /** Consecutive summarizer failures, and the cooldown they started (null for a store failure). */
        failures: number;
        cooldown_until: number | null;
      }
    | {
        type: "compression_dropped";
        why: "no_summarizer" | "failed_over_window";
        tokens_before: number;
        tokens_after: number;
        messages: number;
        first_seq: number;
        last_seq: number;
      }
    | {
        type: "compression_skipped";
        why: CompressionSkipWhy;
        /** When the cooldown or pause ends, for those. */
        until: number | null;
      }
  );

export interface CompressionInput {
  sessionId: string;
  turnId: string | null;
  /** The lease epoch the turn's process holds: its marker is fenced by it (store/lease-fence.ts). */
  leaseEpoch?: number;
  /** The whole durable transcript (markers included; they are never sent). */
  transcript: MessageView[];
  /** The current compaction; the store's is used when it reaches further. */
  compaction: Compaction | null;
  /** The system prompt (it counts toward the size). */
  system: string | null;
  /** The primary model's context window in tokens. */
  window: number;
  /**
   * Input tokens the provider reported for the last request, preferred over the estimate. Pass
   * null after a compaction until the next request reports again: the old figure is stale.
   */
  lastInputTokens: number | null;
  reason: CompressionReason;
  signal: AbortSignal;
  /** Hears this call's own events as well as the compressor's listener does (`/compress` tells them). */
  onEvent?: (event: CompressionEvent) => void;
}

/** One turn's compression budget; start each turn with newTurnCompressionState(). */
export interface TurnCompressionState {
  /** Passes that reached the summarizer or dropped the middle. */
  attempts: number;
  /** The one overflow attempt through the summarizer's cooldown has been used. */
  overflowBypassUsed: boolean;
  /** Skip causes already reported this turn, so a turn of many steps reports each once. */
  reported?: CompressionSkipWhy[];
}

export function newTurnCompressionState(): TurnCompressionState {
  return { attempts: 0, overflowBypassUsed: false, reported: [] };
}

export interface CompressorOptions {
  router: ModelRouter;
  store: StorePort;
  deps: Deps;
  settings: CompressionSettings;
  onEvent?: (event: CompressionEvent) => void;
  /** Sees the summarizer call's own events (routing, retries, skipped candidates). */
  onRouteEvent?: RouteListener;
}

type Measured = { before: number; measured: number };

export class Compressor {
  /** The last cooldown this process knows, for when the store cannot be read. */
  private cooldownCache: CompressionCooldown | null = null;

  constructor(private readonly options: CompressorOptions) {}

  /** Whether the next request needs compressing (threshold of the window, provider usage preferred). */
  needed(
    input: Pick<CompressionInput, "transcript" | "compaction" | "system" | "window" | "lastInputTokens">,
  ): boolean {
    if (!this.options.settings.enabled || input.window <= 0) return false;
    const tokens = input.lastInputTokens ?? this.estimate(input.transcript, input.system, input.compaction);
    return tokens >= this.options.settings.threshold * input.window;
  }

  /**
   * Try to compress; returns the new Compaction (already persisted, marker appended) or null when
   * nothing was done (disabled, cooling down, paused, budget spent, nothing to compress, or the
   * summarizer failed while the request still fits). Never throws except an abort, which is
   * rethrown at once with nothing persisted and no cooldown recorded.
   */
  compress(input: CompressionInput, turn: TurnCompressionState): Promise<Compaction | null> {
    return traceCompression(input, () => this.compressNow(input, turn));
  }

  private async compressNow(input: CompressionInput, turn: TurnCompressionState): Promise<Compaction | null> {
    input.signal.throwIfAborted();
    const { settings, deps } = this.options;
    const now = deps.clock.now();
    const skip = (why: CompressionSkipWhy, until: number | null, message: string) =>
      this.skipped(input, turn, why, until, message);

    if (!settings.enabled && input.reason !== "manual") {
      return skip("disabled", null, "compression: off in config (compression.enabled: false)");
    }
    if (turn.attempts >= settings.max_attempts_per_turn) {
      return skip(
        "budget",
        null,
        `compression: not tried again this turn; ${turn.attempts} of ${settings.max_attempts_per_turn} attempts used`,
      );
    }
    if (input.reason === "threshold") {
      const pause = await this.read(() => readPause(this.options.store, input.sessionId), null);
      if (pause && now < pause.until) {
        return skip(
          "paused",
          pause.until,
          `compression: paused for this session for ${minutes(pause.until - now)}; the last pass saved only ${percent(pause.saving)}`,
        );
      }
    }
    const cooldown = await this.currentCooldown();
    let bypassed = false;
    if (cooldown && now < cooldown.cooldown_until && input.reason !== "manual") {
      const left = minutes(cooldown.cooldown_until - now);
      if (input.reason === "threshold") {
        return skip(
          "cooldown",
          cooldown.cooldown_until,
          `compression: the summarizer is cooling down for ${left} after ${cooldown.failures} failure(s) (${cooldown.last_error})`,
        );
      }
      if (turn.overflowBypassUsed) {
        return skip(
          "cooldown",
          cooldown.cooldown_until,
          `compression: the context overflowed again, but this turn's one attempt through the summarizer's cooldown (${left} left) is used`,
        );
      }
      turn.overflowBypassUsed = true;
      bypassed = true;
    }

    const previous = await this.latestCompaction(input);
    const plan = planCompaction(input.transcript, previous, settings.keep_recent * input.window);
    if (!plan) {
      return skip(
        "nothing_to_compress",
        null,
        "compression: nothing to compress; the conversation is only its first exchange and the recent turns",
      );
    }
    turn.attempts += 1;
    const before = this.estimate(input.transcript, input.system, previous);
    const size: Measured = { before, measured: input.lastInputTokens ?? before };
    this.emit(input, {
      ...this.base(input),
      type: "compression_started",
      tokens_before: before,
      window: input.window,
      messages: plan.messages,
      first_seq: plan.first_seq,
      last_seq: plan.middle_until_seq,
      cooldown_bypassed: bypassed,
      message: `compression: summarizing ${plan.messages} messages (seq ${range(plan)}) of a ${before}-token conversation (window ${input.window})${
        bypassed
          ? "; the provider said the context is too long, so this goes through the summarizer's cooldown once"
          : ""
      }`,
    });

    const attempt = await this.summarize(plan, input.signal);
    if (attempt.kind === "summary") return this.succeed(input, plan, size, attempt.completion, cooldown);
    if (attempt.kind === "no_summarizer") {
      return this.drop(
        input,
        plan,
        size,
        "no_summarizer",
        `no summarizer model could take them (${attempt.why})`,
      );
    }

    const failed = nextCooldown(cooldown, now, attempt.error, settings.cooldown_seconds);
    this.cooldownCache = failed;
    await this.tryWrite([cooldownOp(failed, now)]);
    this.emit(input, {
      ...this.base(input),
      type: "compression_failed",
      why: attempt.kind === "empty" ? "empty_summary" : "summarizer_failed",
      error: attempt.error,
      failures: failed.failures,
      cooldown_until: failed.cooldown_until,
      message: `compression: the summarizer failed (${attempt.error}); it cools down for ${minutes(
        failed.cooldown_until - now,
      )} (failure ${failed.failures} in a row)`,
    });
    const overWindow = input.reason === "overflow" || size.measured >= input.window;
    if (!overWindow) return null; // The request still fits: carry on uncompressed, let the cooldown run.
    const why =
      input.reason === "overflow"
        ? "the provider said the context is too long"
        : `the conversation (${size.measured} tokens) does not fit the ${input.window}-token window`;
    return this.drop(input, plan, size, "failed_over_window", `the summarizer failed and ${why}`);
  }

  private async summarize(
    plan: CompressionPlan,
    signal: AbortSignal,
  ): Promise<
    | { kind: "summary"; completion: Completion }
    | { kind: "no_summarizer"; why: string }
    | { kind: "failed" | "empty"; error: string }
  > {
    let tried: Array<Target & { why: "context_window" | "failed" }> | null = null;
    // Each candidate's own failure, in the provider's words: the reason a failure is told with.
    const failures: string[] = [];
    const forward = this.options.onRouteEvent;
    const onEvent = (event: RouteEvent) => {
      if (event.type === "auxiliary_exhausted") tried = event.tried;
      if (event.type === "auxiliary_skipped" && event.why === "failed")
        failures.push(event.message.replace(/^[a-z_]+: /, ""));
      forward?.(event);
    };
    let completion: Completion | null;
    try {
      completion = await this.options.router.auxiliary(
        "compression",
        summaryRequest(plan, this.options.settings.summary_max_tokens),
        { signal, onEvent },
      );
    } catch (error) {
      if (signal.aborted) throw error;
      return { kind: "failed", error: messageOf(error) };
    }
    // An interrupt that lands as the reply arrives still wins: nothing of it is kept.
    signal.throwIfAborted();
    if (completion) {
      return completion.text.trim() === ""
        ? { kind: "empty", error: `${completion.provider}/${completion.model} returned an empty summary` }
        : { kind: "summary", completion };
    }
    const list: Array<Target & { why: "context_window" | "failed" }> = tried ?? [];
    const described =
      list.map((t) => `${t.provider}/${t.model}: ${t.why}`).join(", ") || "the chain is empty";
    if (list.every((t) => t.why === "context_window")) return { kind: "no_summarizer", why: described };
    const why = failures.length > 0 ? failures.join("; ") : described;
    return { kind: "failed", error: list.length > 1 ? `every summarizer failed: ${why}` : why };
  }

  private async succeed(
    input: CompressionInput,
    plan: CompressionPlan,
    size: Measured,
    completion: Completion,
    cooldown: CompressionCooldown | null,
  ): Promise<Compaction | null> {
    const now = this.options.deps.clock.now();
    const summary = completion.text.trim();
    const compaction: Compaction = {
      head_until_seq: plan.head_until_seq,
      middle_until_seq: plan.middle_until_seq,
      summary,
      messages: plan.messages,
      created_at: now,
    };
    const after = this.estimate(input.transcript, input.system, compaction);
    const saving = size.before > 0 ? (size.before - after) / size.before : 0;
    const low = saving < this.options.settings.min_saving;
    const pausedUntil = low ? now + Math.round(this.options.settings.low_saving_pause_seconds * 1000) : null;
    const ops: WriteOp[] = [];
    // The summarizer worked: its failure streak ends.
    if (cooldown) ops.push(cooldownOp(null, now));
    if (pausedUntil !== null)
      ops.push(pauseOp(input.sessionId, { until: pausedUntil, saving, paused_at: now }, now));
    this.cooldownCache = null;

    if (after >= size.before) {
      // A summary as long as what it replaces would only cost a call each time: keep nothing of it.
      await this.tryWrite(ops);
      return this.skipped(
        input,
        null,
        "no_saving",
        pausedUntil,
        `compression: the summary (${after} tokens with it) saved nothing over ${size.before} tokens, so it was not used; automatic compression of this session pauses for ${minutes(
          (pausedUntil ?? now) - now,
        )}`,
      );
    }

    const summaryTokens = estimateTokens([{ role: "user", content: summary }]);
    const fresh = plan.previous ? `, ${plan.fresh.length} of them new since the last compression` : "";
    const note = `compressed ${plan.messages} messages (seq ${range(plan)}${fresh}) into a summary of ${summaryTokens} tokens (${size.before} → ${after} tokens); the originals stay in the transcript`;
    const saved = await this.persist(input, compaction, note, ops);
    if (!saved) return null;
    this.emit(input, {
      ...this.base(input),
      type: "compression_done",
      tokens_before: size.before,
      tokens_after: after,
      messages: plan.messages,
      first_seq: plan.first_seq,
      last_seq: plan.middle_until_seq,
      summary_tokens: summaryTokens,
      model: `${completion.provider}/${completion.model}`,
      paused_until: pausedUntil,
      message: `compression: ${note}${
        pausedUntil === null
          ? ""
          : `; it saved only ${percent(saving)}, so automatic compression of this session pauses for ${minutes(pausedUntil - now)}`
      }`,
    });
    return compaction;
  }

  /** Replace the middle by a visible note that it was dropped: never silently. */
  private async drop(
    input: CompressionInput,
    plan: CompressionPlan,
    size: Measured,
    why: "no_summarizer" | "failed_over_window",
    because: string,
  ): Promise<Compaction | null> {
    const compaction: Compaction = {
      head_until_seq: plan.head_until_seq,
      middle_until_seq: plan.middle_until_seq,
      summary: null,
      messages: plan.messages,
      created_at: this.options.deps.clock.now(),
    };
    const after = this.estimate(input.transcript, input.system, compaction);
    const note = `dropped ${plan.messages} messages (seq ${range(plan)}) from what the model sees, without a summary: ${because}; the originals stay in the transcript`;
    const saved = await this.persist(input, compaction, note, []);
    if (!saved) return null;
    this.emit(input, {
      ...this.base(input),
      type: "compression_dropped",
      why,
      tokens_before: size.before,
      tokens_after: after,
      messages: plan.messages,
      first_seq: plan.first_seq,
      last_seq: plan.middle_until_seq,
      message: `compression: ${note}`,
    });
    return compaction;
  }

  /** The compaction and its marker in one transaction, so neither exists without the other. */
  private async persist(
    input: CompressionInput,
    compaction: Compaction,
    note: string,
    extra: WriteOp[],
  ): Promise<boolean> {
    const { store, deps } = this.options;
    const record: RecordPutOp = {
      op: "record.put",
      kind: COMPACTION_KIND,
      key: input.sessionId,
      session_id: input.sessionId,
      value: JSON.stringify(compaction),
      updated_at: deps.clock.now(),
    };
    const marker = store.messageOp({
      session_id: input.sessionId,
      role: MARKER_ROLE,
      name: "compression",
      content: note,
      turn_id: input.turnId,
      lease_epoch: input.leaseEpoch,
    });
    try {
      await store.write([record, marker, ...extra]);
      return true;
    } catch (error) {
      this.emit(input, {
        ...this.base(input),
        type: "compression_failed",
        why: "store",
        error: messageOf(error),
        failures: 0,
        cooldown_until: null,
        message: `compression: the result could not be saved (${messageOf(error)}); the conversation goes on uncompressed`,
      });
      return false;
    }
  }

  private skipped(
    input: CompressionInput,
    turn: TurnCompressionState | null,
    why: CompressionSkipWhy,
    until: number | null,
    message: string,
  ): null {
    if (turn) {
      turn.reported ??= [];
      if (turn.reported.includes(why)) return null;
      turn.reported.push(why);
    }
    this.emit(input, { ...this.base(input), type: "compression_skipped", why, until, message });
    return null;
  }

  /** The compaction that reaches furthest: the caller's or the store's (another process may have compacted). */
  private async latestCompaction(input: CompressionInput): Promise<Compaction | null> {
    const stored = await this.read(
      () => this.options.store.getRecord<Compaction>(COMPACTION_KIND, input.sessionId),
      null,
    );
    const given = input.compaction;
    if (!isCompaction(stored)) return given;
    if (!given) return stored;
    return stored.middle_until_seq > given.middle_until_seq ? stored : given;
  }

  private async currentCooldown(): Promise<CompressionCooldown | null> {
    const stored = await this.read(() => readCooldown(this.options.store), undefined);
    if (stored !== undefined) this.cooldownCache = stored;
    return this.cooldownCache;
  }

  /** A store that cannot be read must not stop compression; the caller's fallback stands in. */
  private async read<T, F>(get: () => Promise<T>, fallback: F): Promise<T | F> {
    try {
      return await get();
    } catch {
      return fallback;
    }
  }

  /** Cooldown and pause writes are bookkeeping: a store fault must not end the turn. */
  private async tryWrite(ops: WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    try {
      await this.options.store.write(ops);
    } catch {
      // The in-memory cooldown still holds for this process.
    }
  }

  private estimate(transcript: readonly MessageView[], system: string | null, compaction: Compaction | null) {
    return estimateTokens(buildHistory(transcript, { system, compaction }));
  }

  private base(input: CompressionInput): EventBase {
    return {
      layer: "compression",
      session_id: input.sessionId,
      turn_id: input.turnId,
      reason: input.reason,
      message: "",
    };
  }

  private emit(input: CompressionInput, event: CompressionEvent): void {
    compressionSpanEvent(event);
    for (const listener of [this.options.onEvent, input.onEvent]) {
      try {
        listener?.(event);
      } catch {
        // A broken listener must not break compression.
      }
    }
  }
}

function isCompaction(value: unknown): value is Compaction {
  if (typeof value !== "object" || value === null) return false;
  const c = value as Record<string, unknown>;
  return (
    typeof c.head_until_seq === "number" &&
    typeof c.middle_until_seq === "number" &&
    (typeof c.summary === "string" || c.summary === null) &&
    typeof c.messages === "number"
  );
}

function range(plan: CompressionPlan): string {
  return `${plan.first_seq}–${plan.middle_until_seq}`;
}

function minutes(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return s < 120 ? `${s} s` : `${Math.ceil(s / 60)} min`;
}

function percent(fraction: number): string {
  return `${Math.round(fraction * 100)}%`;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
