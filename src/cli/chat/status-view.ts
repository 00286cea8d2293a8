// What `tenax chat` shows on stderr while a turn runs, beside the reply on stdout: one line per
// event, and on a terminal a live area redrawn in place: a spinner with the elapsed time while a
// model call or a tool runs, and while a retry waits a block with the failure, the context size and
// a countdown, which collapses into the same one line a log gets once the next attempt starts.
// A key cooled by the same failure the retry waits on is said in that retry's line, not its own.
// While the user types an answer (an approval), the live area is held: nothing is redrawn over the
// line being typed, and the spinner comes back once the answer is in.
import type { AgentEvent, TurnResult } from "../../agent/turn.js";
import type { Target } from "../../llm/route-events.js";
import {
  credentialsLine,
  type Exhausted,
  failureOf,
  type GaveUp,
  gaveUpLine,
  keyNotes,
  type Retry,
  type Rotated,
  retryDetail,
  retryLine,
  seconds,
  toolEndLine,
  toolStartLine,
} from "./event-lines.js";
import { explainFailure } from "./failure-hints.js";
import { LiveArea, type LiveLine } from "./live-area.js";
import { type Paint, paint, type TerminalCaps } from "./terminal-style.js";
import { turnFailure } from "./turn-failure.js";

export interface ViewIO {
  /** Status output (stderr). */
  write(text: string): void;
  /** The reply (stdout). */
  reply(text: string): void;
  caps: TerminalCaps;
  /** The reply and the status share one terminal, so an unfinished reply line is on the screen. */
  shared: boolean;
  columns(): number;
}

export interface ViewDeps {
  now(): number;
  every(ms: number, tick: () => void): { cancel(): void };
}

/** What the view looks up about the configured models. */
export interface ModelInfo {
  window(target: Target): number | null;
}

type Live =
  | { kind: "call"; label: string; since: number }
  | { kind: "tool"; label: string; since: number }
  | { kind: "wait"; event: Retry; notes: string | null; until: number; line: string };

const FRAME_MS = 100;
/** A call or tool that ends sooner gets no spinner at all (no flicker on fast answers). */
const SPINNER_AFTER_MS = 200;
const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

export function defaultViewDeps(): ViewDeps {
  return {
    now: () => Date.now(),
    every: (ms, tick) => {
      const timer = setInterval(tick, ms);
      timer.unref();
      return { cancel: () => clearInterval(timer) };
    },
  };
}

export class ChatView {
  private readonly p: Paint;
  private readonly area: LiveArea | null;
  private live: Live | null = null;
  private timer: { cancel(): void } | null = null;
  private frame = 0;
  /** The last reply text on the shared terminal did not end its line. */
  private midLine = false;
  private turnStart: number | null = null;
  private firstFailure: number | null = null;
  private target: Target | null = null;
  /** Key notes held for the retry line they lead to (see the module comment). */
  private rotated: Rotated | null = null;
  private exhausted: Exhausted | null = null;
  private gaveUp: GaveUp | null = null;
  /** Questions waiting for a typed answer: while any is open, nothing is drawn in place. */
  private holds = 0;

  constructor(
    private readonly io: ViewIO,
    private readonly models: ModelInfo,
    private readonly deps: ViewDeps = defaultViewDeps(),
  ) {
    this.p = paint(io.caps.color);
    this.area = io.caps.live
      ? new LiveArea(
          (t) => io.write(t),
          () => io.columns() || 80,
        )
      : null;
  }

  /** A line of information for the user. */
  info(text: string): void {
    this.line(text);
  }

  error(text: string): void {
    this.line(`${this.p.red("error:")} ${text}`);
  }

  /**
   * Someone is about to type an answer on the terminal: the live area is put away and stays away
   * until the returned release is called (once per hold), so no redraw erases what is typed.
   */
  holdLive(): () => void {
    this.holds++;
    this.area?.clear();
    this.stopTimer();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      if (this.holds === 0 && this.live !== null && this.area !== null) {
        this.timer ??= this.deps.every(FRAME_MS, () => this.tick());
        this.draw();
      }
    };
  }

  beginTurn(target: Target): void {
    this.turnStart = this.deps.now();
    this.firstFailure = null;
    this.gaveUp = null;
    this.target = target;
    this.callStarted();
  }

  /** A piece of the streamed reply. */
  text(delta: string): void {
    if (delta === "") return;
    this.flushNotes();
    this.setLive(null);
    this.io.reply(delta);
    if (this.io.shared) this.midLine = !delta.endsWith("\n");
  }

  event(e: AgentEvent): void {
    switch (e.type) {
      case "text":
        this.text(e.delta);
        return;
      case "turn_started":
      case "turn_finished":
      case "continuation":
        return;
      case "credential_rotated":
        this.failed();
        this.flushNotes();
        // With no usable key left, "every key is cooling" follows at once: held for one line.
        if (e.next_key === null) this.rotated = e;
        else this.line(this.p.yellow(`[credentials] ${e.message}`));
        return;
      case "credentials_exhausted":
        this.failed();
        if (this.exhausted) this.flushNotes();
        this.exhausted = e;
        return;
      case "retry":
        this.retry(e);
        return;
      case "retry_exhausted": {
        this.failed();
        const gave = this.withStatus(e);
        const notes = this.takeNotes();
        this.gaveUp = gave;
        this.setLive(null);
        this.line(this.p.yellow(gaveUpLine(gave, notes)));
        return;
      }
      case "stream_restart":
        this.failed();
        this.flushNotes();
        this.setLive(null);
        this.io.reply("\n");
        this.midLine = false;
        this.line(this.p.yellow(`[retry] ${e.message}`));
        this.callStarted();
        return;
      case "fallback":
        this.failed();
        this.flushNotes();
        this.setLive(null);
        this.line(this.p.yellow(`[fallback] ${e.message}`));
        this.target = e.to;
        this.callStarted();
        return;
      case "tool_started":
        this.flushNotes();
        this.setLive(null);
        this.line(this.p.cyan(toolStartLine(e.name, e.arguments)));
        this.setLive({ kind: "tool", label: e.name, since: this.deps.now() });
        return;
      case "tool_progress":
        this.line(this.p.dim(`  … ${e.tool}: ${e.message}`));
        return;
      case "tool_finished": {
        this.setLive(null);
        const line = toolEndLine(e.summary, e.ok, e.ms);
        this.line((e.summary?.ok ?? e.ok) ? this.p.green(line) : this.p.red(line));
        this.callStarted();
        return;
      }
      case "usage":
      case "tool_call":
      case "tool_call_delta":
      case "logprobs":
        return;
      case "request_fixed":
      case "fallback_skipped":
      case "fallback_exhausted":
      case "breaker_opened":
      case "breaker_half_open":
      case "breaker_closed":
      case "auxiliary_skipped":
      case "auxiliary_routed":
      case "auxiliary_exhausted":
      case "compression_started":
      case "compression_done":
      case "compression_failed":
      case "compression_dropped":
      case "compression_skipped":
      case "guardrail":
      case "approval_requested":
      case "approval_decided":
      case "checkpoint":
      case "checkpoint_failed":
      case "turn_stalled":
      case "turn_stall_cleared":
      case "turn_deadline":
      case "turn_stop_requested": {
        this.flushNotes();
        const line = `[${e.layer}] ${e.message}`;
        this.line(QUIET_LAYERS.has(e.layer) ? this.p.dim(line) : this.p.yellow(line));
        return;
      }
      default: {
        // Every event is a case above: the compiler says so here when a new one is added.
        const _unhandled: never = e;
        return;
      }
    }
  }

  /**
   * After the turn: end the reply's line, and say how it ended when it did not complete. Null when
   * the turn threw instead (its caller reports the error): the live area is put away all the same.
   */
  endTurn(result: TurnResult | null): void {
    this.flushNotes();
    this.setLive(null);
    if (result === null) {
      if (this.midLine) this.io.write("\n");
      this.midLine = false;
      this.turnStart = null;
      this.target = null;
      return;
    }
    if (result.reply !== "" || result.status === "completed") this.io.reply("\n");
    this.midLine = false;
    if (result.status === "interrupted") this.info("(interrupted)");
    else if (result.status === "failed") {
      const explained = explainFailure(turnFailure(result.failure, result.error, this.gaveUp));
      this.error(explained.headline);
      this.line(`${this.p.bold("what to do:")} ${explained.todo}`);
    } else if (result.partial)
      this.info(`(the reply was cut by the output limit: finish reason ${result.finish_reason})`);
    this.turnStart = null;
    this.target = null;
  }

  private retry(event: Retry): void {
    this.failed();
    const e = this.withStatus(event);
    const notes = this.takeNotes();
    const turnMs = this.turnStart === null ? null : this.deps.now() - this.turnStart;
    const line = retryLine(e, notes, turnMs);
    if (this.area === null) {
      this.line(line);
      return;
    }
    this.setLive({ kind: "wait", event: e, notes, until: this.deps.now() + e.delay_ms, line });
  }

  /** A model call is under way (the turn's first, after a tool, a retry or a fallback). */
  private callStarted(): void {
    const t = this.target;
    if (t === null) return;
    this.setLive({ kind: "call", label: `${t.provider}/${t.model}`, since: this.deps.now() });
  }

  /** A wait on cooling keys has no status of its own: the failure that cooled the key had one. */
  private withStatus<E extends Retry | GaveUp>(e: E): E {
    return e.status === null && this.rotated !== null ? { ...e, status: this.rotated.status } : e;
  }

  private failed(): void {
    this.firstFailure ??= this.deps.now();
  }

  private takeNotes(): string | null {
    const notes = keyNotes(this.rotated, this.exhausted);
    this.rotated = null;
    this.exhausted = null;
    return notes;
  }

  /** Key notes no retry line took: said on their own. */
  private flushNotes(): void {
    if (this.rotated === null && this.exhausted === null) return;
    const line = credentialsLine(this.rotated, this.exhausted);
    this.rotated = null;
    this.exhausted = null;
    this.line(this.p.yellow(line));
  }

  /** A permanent line, above the live area. */
  private line(text: string): void {
    const redraw = this.area?.showing === true;
    this.area?.clear();
    if (this.midLine) {
      this.io.write("\n");
      this.midLine = false;
    }
    this.io.write(`${text}\n`);
    if (redraw) this.draw();
  }

  private setLive(next: Live | null): void {
    const was = this.live;
    if (was?.kind === "wait") {
      // The wait is over: its block becomes the one line a log gets.
      this.live = null;
      this.area?.clear();
      this.line(this.p.yellow(was.line));
    }
    this.live = next;
    if (this.area === null) return;
    if (next === null) {
      this.area.clear();
      this.stopTimer();
      return;
    }
    if (this.holds > 0) return;
    this.timer ??= this.deps.every(FRAME_MS, () => this.tick());
    this.draw();
  }

  private stopTimer(): void {
    this.timer?.cancel();
    this.timer = null;
  }

  private tick(): void {
    this.frame++;
    const live = this.live;
    if (live?.kind === "wait" && this.deps.now() >= live.until) {
      const e = live.event;
      this.setLive({
        kind: "call",
        label: `${e.provider}/${e.model}, attempt ${e.attempt + 1} of ${e.max_attempts}`,
        since: this.deps.now(),
      });
      return;
    }
    this.draw();
  }

  private draw(): void {
    const area = this.area;
    const live = this.live;
    if (area === null || live === null || this.holds > 0) return;
    // Never over an unfinished reply line: the erase would take the reply with it. A spinner waits
    // for the reply's line to end; a tool or a retry's wait ends it.
    if (this.midLine) {
      if (live.kind === "call") return;
      this.io.write("\n");
      this.midLine = false;
    }
    const now = this.deps.now();
    if (live.kind !== "wait") {
      if (now - live.since < SPINNER_AFTER_MS) {
        area.clear();
        return;
      }
      const spin = FRAMES[this.frame % FRAMES.length] ?? "";
      const style = live.kind === "tool" ? this.p.cyan : this.p.dim;
      area.show([{ text: `${spin} ${live.label} · ${seconds(now - live.since)}`, style }]);
      return;
    }
    area.show(this.waitBlock(live, now));
  }

  private waitBlock(live: Extract<Live, { kind: "wait" }>, now: number): LiveLine[] {
    const e = live.event;
    const window = this.models.window({ provider: e.provider, model: e.model });
    const context =
      e.context_tokens === null
        ? "context size unknown"
        : `context ~${e.context_tokens} tokens${window === null ? "" : ` of ${window}`}`;
    const since = [
      ...(this.turnStart === null ? [] : [`turn ${seconds(now - this.turnStart)}`]),
      ...(this.firstFailure === null ? [] : [`since the first failure ${seconds(now - this.firstFailure)}`]),
    ];
    const spin = FRAMES[this.frame % FRAMES.length] ?? "";
    return [
      { text: `⚠ ${failureOf(e)}`, style: (t) => this.p.bold(this.p.yellow(t)) },
      { text: `  ${retryDetail(e, live.notes)}` },
      { text: `  ${context} · attempt ${e.attempt} of ${e.max_attempts} failed`, style: this.p.dim },
      {
        text: `${spin} next attempt in ${seconds(live.until - now)} · ${since.join(" · ")}`,
        style: this.p.yellow,
      },
    ];
  }
}

/** Layers whose lines are information rather than trouble. */
const QUIET_LAYERS: ReadonlySet<string> = new Set(["checkpoints", "compression", "auxiliary"]);
