// The gateway's turns: admission (the per-session and global turn limits), the running turns and
// who watches them, and the shutdown states (taking turns, draining, stopped). Its HTTP app is
// app.ts (routes under routes/); the port is opened only in run.ts.
import type { Agent } from "../agent/agent.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { type InterruptCode, TurnInterrupt } from "../agent/turn-failure.js";
import type { TenaxConfig } from "../config/schema.js";
import { HttpError } from "../http/http-error.js";
import type { WriteOp } from "../store/ops.js";
import type { Store } from "../store/store.js";
import type { ChatMessage } from "./chat-request.js";
import { SHUTDOWN_MESSAGE, unavailable, unknownSession } from "./gateway-errors.js";

export interface GatewayOptions {
  agent: Agent;
  store: Store;
  config: TenaxConfig;
  /** The folder the agent's tools start in. */
  cwd: string;
  now?: () => number;
  /** Every event of every turn this gateway runs, with its session (the gateway's event feed). */
  onTurnEvent?: (sessionId: string, event: AgentEvent) => void;
}

/** Someone following a turn the gateway runs: a streamed reply, a run's event log. */
export interface TurnWatcher {
  onEvent(event: AgentEvent): void;
  /** Told once when the gateway starts to stop, while the turn still runs. */
  shutdown(message: string): void;
}

/** The work of one turn, given its stop signal and where its events go. */
export type TurnWork = (signal: AbortSignal, onEvent: (event: AgentEvent) => void) => Promise<TurnResult>;

export interface LaunchRequest {
  /** Continue this session (X-Session-Id); without it a new session is made. */
  sessionId?: string;
  /** For a new session: the conversation before the new user message, as a client sent it. */
  earlier?: ChatMessage[];
  text: string;
  watcher?: TurnWatcher;
}

export interface LaunchedTurn {
  sessionId: string;
  controller: AbortController;
  /** Settles when the turn has ended and is persisted; rejects only when the turn itself threw. */
  result: Promise<TurnResult>;
  /** Whether the turn's first write committed (so a new session exists). */
  started(): boolean;
}

interface ActiveTurn {
  controller: AbortController;
  done: Promise<void>;
  watchers: TurnWatcher[];
}

export class Gateway {
  private readonly active = new Map<string, ActiveTurn>();
  /** Turns reserved or running; counted before the session exists so the limit has no gaps. */
  private inFlight = 0;
  private stopping = false;
  /** The gateway's clock (the routes' too). */
  readonly now: () => number;

  constructor(private readonly options: GatewayOptions) {
    this.now = options.now ?? Date.now;
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  get turnsInFlight(): number {
    return this.inFlight;
  }

  /** Stop taking turns and tell every open stream once. */
  beginShutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const turn of this.active.values()) for (const w of turn.watchers) w.shutdown(SHUTDOWN_MESSAGE);
  }

  /** Wait for running turns up to `timeoutMs` (or until `cut` aborts); true when none is left. */
  async drain(timeoutMs: number, cut?: AbortSignal): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
      cut?.addEventListener("abort", () => resolve(false), { once: true });
    });
    const all = Promise.all([...this.active.values()].map((t) => t.done)).then(() => true);
    try {
      return await Promise.race([all, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Interrupt what is left through each turn's signal, and wait for the turns to persist it. */
  async interruptAll(): Promise<number> {
    const left = [...this.active.values()];
    for (const turn of left)
      turn.controller.abort(new TurnInterrupt("shutting_down", "the gateway is shutting down"));
    await Promise.all(left.map((t) => t.done));
    return left.length;
  }

  /**
   * Admit and start one turn: 503 while stopping, 404 for an unknown session, 409 when the session
   * is busy, 429 past gateway.max_turns. Resolves once the turn is started; a new session is
   * created by the turn's first write (queued now, so a write made after this comes after it).
   */
  async launch(request: LaunchRequest): Promise<LaunchedTurn> {
    const requested = request.sessionId;
    if (this.stopping) throw unavailable();
    if (requested !== undefined && !this.options.store.getSession(requested)) throw unknownSession(requested);
    if (requested !== undefined && this.active.has(requested))
      throw new HttpError(
        409,
        "conflict_error",
        "session_busy",
        `session ${requested} is already running a turn; wait for its reply and send the next message then (one turn at a time per session)`,
      );
    const max = this.options.config.gateway.max_turns;
    if (this.inFlight >= max)
      throw new HttpError(
        429,
        "rate_limit_error",
        "too_many_turns",
        `the gateway is already running ${max} turns (gateway.max_turns); retry when one has finished`,
        { "retry-after": "1" },
      );
    this.inFlight++;
    // A new session is created by the turn's first write, with its history and the question.
    const created = requested === undefined ? this.newSession(request.earlier ?? []) : null;
    const sessionId = requested ?? (created?.id as string);
    const before = created?.ops ?? [];
    return this.start(
      sessionId,
      (signal, onEvent) =>
        this.options.agent.turn({
          sessionId,
          text: request.text,
          cwd: this.options.cwd,
          signal,
          onEvent,
          before,
        }),
      request.watcher,
    );
  }

  /**
   * Run a turn the gateway did not admit through `launch` (a turn resumed after a crash) as the
   * session's one turn: it counts for 409 and the turn limit, drains and is interrupted like any.
   */
  track(sessionId: string, work: TurnWork, watcher?: TurnWatcher): LaunchedTurn {
    this.inFlight++;
    return this.start(sessionId, work, watcher);
  }

  /** Whether a session has a turn running here. */
  isRunning(sessionId: string): boolean {
    return this.active.has(sessionId);
  }

  /** Add a watcher to the session's running turn; false when it has none. */
  watch(sessionId: string, watcher: TurnWatcher): boolean {
    const turn = this.active.get(sessionId);
    if (!turn) return false;
    turn.watchers.push(watcher);
    return true;
  }

  /** Interrupt the session's running turn; false when it has none. */
  interrupt(sessionId: string, reason: string, code: InterruptCode = "interrupted"): boolean {
    const turn = this.active.get(sessionId);
    if (!turn) return false;
    turn.controller.abort(new TurnInterrupt(code, reason));
    return true;
  }

  /** Start `work` for an admitted session (inFlight already counted). */
  private start(sessionId: string, work: TurnWork, watcher?: TurnWatcher): LaunchedTurn {
    const controller = new AbortController();
    let finished!: () => void;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const active: ActiveTurn = { controller, done, watchers: watcher ? [watcher] : [] };
    this.active.set(sessionId, active);
    let started = false;
    const onEvent = (event: AgentEvent) => {
      if (event.type === "turn_started") started = true;
      for (const w of active.watchers) {
        try {
          w.onEvent(event);
        } catch {
          // A broken watcher never breaks the turn or the other watchers.
        }
      }
      try {
        this.options.onTurnEvent?.(sessionId, event);
      } catch {
        // Nor does the event feed.
      }
    };
    const result = (async () => {
      try {
        return await work(controller.signal, onEvent);
      } finally {
        this.active.delete(sessionId);
        this.inFlight--;
        finished();
      }
    })();
    // The caller handles a rejection; this keeps an unobserved one from killing the process.
    result.catch(() => {});
    return { sessionId, controller, result, started: () => started };
  }

  /**
   * A conversation an ordinary OpenAI client sent whole: the writes creating its session, with its
   * earlier turns as the session's history.
   */
  private newSession(earlier: ChatMessage[]): { id: string; ops: WriteOp[] } {
    const store = this.options.store;
    const { id, op } = this.options.agent.newSessionOp({ source: "gateway" });
    // The agent speaks with its own system prompt; a client's system messages are not history.
    const history = earlier.filter((m) => m.role === "user" || m.role === "assistant");
    return {
      id,
      ops: [op, ...history.map((m) => store.messageOp({ session_id: id, role: m.role, content: m.content }))],
    };
  }
}
