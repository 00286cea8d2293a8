// The gateway's turns: admission (one turn per session with a bounded queue behind it,
// session-queue.ts; the global limit; stateless conversations, conversations.ts), the running
// turns and who watches them, and the shutdown states (taking turns, draining, stopped). Its HTTP
// app is app.ts (routes under routes/); the port is opened only in run.ts.
import type { Agent } from "../agent/agent.js";
import type { ApprovalChannel } from "../agent/tools/types.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { type InterruptCode, TurnInterrupt } from "../agent/turn-failure.js";
import type { TurnRequest } from "../agent/turn-request.js";
import type { TenaxConfig } from "../config/schema.js";
import type { Target } from "../llm/route-events.js";
import { turnRunningDetail } from "../store/one-running-turn.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import type { ChatMessage } from "./chat-request.js";
import { Conversations, conversationHash, historyOf } from "./conversations.js";
import {
  SHUTDOWN_MESSAGE,
  sessionBusy,
  sessionQueueFull,
  tooManyTurns,
  unavailable,
  unknownSession,
} from "./gateway-errors.js";
import { SessionQueue } from "./session-queue.js";

/** How often a message for a session running a turn elsewhere tries to start again. */
const OTHER_OWNER_POLL_MS = 250;

export interface GatewayOptions {
  agent: Agent;
  store: StorePort;
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
  /** What the client asks of the turn's model calls (its system text, output cap, sampling). */
  request?: TurnRequest;
  watcher?: TurnWatcher;
  /** While the turn waits for its busy session: aborting it leaves the queue at once. */
  signal?: AbortSignal;
  /** Told when the turn waits behind the session's running one: before launch's promise settles. */
  onQueued?: (sessionId: string, position: number) => void;
  /** Who can approve what the exec policy holds back (a run); none: it is denied at once. */
  approvals?: ApprovalChannel;
  /** Start the turn on this model instead of the primary (a cron job's pinned model). */
  model?: Target;
  /** The folder the turn's tools start in, instead of the gateway's (a cron job's --dir). */
  cwd?: string;
  /** False for a caller with its own deadline (a cron job's --timeout): agent.turn_deadline does not apply. */
  deadline?: boolean;
  /** When the caller first tells its client of the turn (TurnInput.acknowledgedBy); "start" when left out. */
  acknowledgedBy?: "start" | "answer";
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
  /** Model calls (the model-gateway mode) running: they count, drain and are interrupted like turns. */
  private readonly calls = new Set<{ controller: AbortController; done: Promise<void> }>();
  /** Turns reserved or running; counted before the session exists so the limit has no gaps. */
  private inFlight = 0;
  /** Turns waiting for their busy session; they count for nothing else until they start. */
  private readonly queue: SessionQueue<LaunchedTurn>;
  private readonly conversations: Conversations;
  private stopping = false;
  /** The gateway's clock (the routes' too). */
  readonly now: () => number;

  constructor(private readonly options: GatewayOptions) {
    this.now = options.now ?? Date.now;
    this.queue = new SessionQueue(options.config.gateway.session_queue);
    this.conversations = new Conversations({
      store: options.store,
      router: options.agent.runtime.router,
      titleModel: options.config.auxiliary.title !== undefined,
      now: this.now,
    });
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  get turnsInFlight(): number {
    return this.inFlight;
  }

  get turnsQueued(): number {
    return this.queue.size;
  }

  /** Stop taking turns, answer every waiting one 503 (it never starts), tell every open stream once. */
  beginShutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.queue.rejectAll(() => unavailable());
    // Titles being made stop: those sessions show their first message.
    void this.conversations.close();
    for (const turn of this.active.values()) for (const w of turn.watchers) w.shutdown(SHUTDOWN_MESSAGE);
  }

  /** Wait for running turns up to `timeoutMs` (or until `cut` aborts); true when none is left. */
  async drain(timeoutMs: number, cut?: AbortSignal): Promise<boolean> {
    // Cut before the drain began (a second signal while the gateway was still starting).
    if (cut?.aborted === true) return this.active.size === 0 && this.calls.size === 0;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
      cut?.addEventListener("abort", () => resolve(false), { once: true });
    });
    const all = Promise.all([...this.active.values(), ...this.calls].map((t) => t.done)).then(() => true);
    try {
      return await Promise.race([all, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Interrupt what is left through each turn's signal, and wait for the turns to persist it. */
  async interruptAll(): Promise<number> {
    const left = [...this.active.values(), ...this.calls];
    for (const turn of left)
      turn.controller.abort(new TurnInterrupt("shutting_down", "the gateway is shutting down"));
    await Promise.all(left.map((t) => t.done));
    return left.length;
  }

  /**
   * Run one model call (the model-gateway mode) as the gateway runs a turn: 503 while stopping,
   * 429 past gateway.max_turns (calls and turns share it), waited for by the drain and interrupted
   * through `signal` when the drain runs out.
   */
  async admitCall(run: (signal: AbortSignal) => Promise<void>): Promise<void> {
    if (this.stopping) throw unavailable();
    this.reserve();
    const controller = new AbortController();
    let finished: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    const call = { controller, done };
    this.calls.add(call);
    try {
      await run(controller.signal);
    } finally {
      this.calls.delete(call);
      this.inFlight--;
      finished();
    }
  }

  /** Whether a session's turn runs here, and how many messages wait behind it. */
  busy(id: string): { running: boolean; queued: number } {
    return { running: this.active.has(id), queued: this.queue.waiting(id) };
  }

  /**
   * Admit one turn: 503 while stopping, 404 for an unknown session, 429 past gateway.max_turns
   * (for a session with no turn running). A turn for a busy session waits behind it in order
   * (429 past gateway.session_queue) and takes the ending turn's place in gateway.max_turns, so a
   * queue never waits for a free slot and cannot be starved by other sessions. Resolves once the
   * turn is started; a new session is created by the turn's first write (queued now, so a write
   * made after this comes after it).
   */
  async launch(request: LaunchRequest): Promise<LaunchedTurn> {
    if (this.stopping) throw unavailable();
    const requested = request.sessionId;
    if (requested === undefined) {
      const earlier = request.earlier ?? [];
      // The earlier messages are a stored session's conversation: it goes on there (and waits
      // for that session like any message for it).
      const known = await this.conversations.find(earlier);
      if (known) return this.launch({ ...request, sessionId: known.sessionId });
      this.reserve();
      // A new session is created by the turn's first write, with its history and the question.
      const created = this.newSession(earlier);
      const history = historyOf(earlier);
      const fresh = {
        base: conversationHash(null, history),
        firstMessage: history.find((m) => m.role === "user")?.content ?? request.text,
      };
      return this.start(created.id, this.agentWork(created.id, request, created.ops, fresh), request.watcher);
    }
    const store = this.options.store;
    if (!(await store.getSession(requested))) throw unknownSession(requested);
    const begin = () => this.start(requested, this.agentWork(requested, request, []), request.watcher);
    if (!this.active.has(requested)) {
      this.reserve();
      return begin();
    }
    // The queue starts the next turn synchronously when the session's turn ends (nothing can
    // take the session in between), so the check that the session was not deleted while the
    // turn waited is the turn's first step: a deleted session fails the turn with unknown_session.
    const waiting = this.queue.enqueue(
      requested,
      () =>
        this.start(
          requested,
          this.agentWork(requested, request, [], undefined, () => store.getSession(requested)),
          request.watcher,
        ),
      request.signal,
    );
    if (!waiting.queued) throw sessionQueueFull(requested, this.options.config.gateway.session_queue);
    request.onQueued?.(requested, waiting.position);
    return waiting.started;
  }

  /**
   * One turn at a time per session, whoever runs it: the store refuses a turn's start while the
   * session runs one elsewhere (another gateway, one being taken over from a gateway that died, a
   * `tenax chat`). The start is tried again until it is taken or gateway.session_wait has passed
   * (409 session_busy); nothing of a refused start was written.
   */
  private async whenSessionFree<T>(
    sessionId: string,
    signal: AbortSignal,
    start: () => Promise<T>,
  ): Promise<T> {
    const waitS = this.options.config.gateway.session_wait;
    const until = this.now() + waitS * 1000;
    for (;;) {
      try {
        return await start();
      } catch (error) {
        const running = turnRunningDetail(error);
        if (running === null) throw error;
        await this.whileRunning(sessionId, running, { until, waitS }, signal);
      }
    }
  }

  /**
   * Wait while the turn that holds the session is still its last turn and running (read, not tried:
   * each refused start would be a failed turn in the traces), then let the start be tried again.
   * 503 once the gateway stops, 409 session_busy at the deadline, the client's reason if it left.
   */
  private async whileRunning(
    sessionId: string,
    running: { running_turn_id: string | null; owner: string | null },
    deadline: { until: number; waitS: number },
    signal: AbortSignal,
  ): Promise<void> {
    for (;;) {
      if (this.stopping) throw unavailable();
      if (this.now() >= deadline.until) throw sessionBusy(sessionId, running.owner, deadline.waitS);
      if (signal.aborted) throw signal.reason;
      await new Promise((resolve) => setTimeout(resolve, OTHER_OWNER_POLL_MS));
      const last = (await this.options.store.getSession(sessionId))?.last_turn;
      if (last?.id !== running.running_turn_id || last.status !== "running") return;
    }
  }

  /** Count a turn about to start against gateway.max_turns (429 when it is reached). */
  private reserve(): void {
    const max = this.options.config.gateway.max_turns;
    if (this.inFlight >= max) throw tooManyTurns(max);
    this.inFlight++;
  }

  /**
   * The agent's turn, whose end commits the session's conversation fingerprint with the answer (so
   * the client's next request finds it); a new conversation (`fresh`) also gets its title made in
   * the background when a title model is configured.
   */
  private agentWork(
    sessionId: string,
    launch: LaunchRequest,
    before: WriteOp[],
    fresh?: { base: string; firstMessage: string },
    stillThere?: () => Promise<unknown>,
  ): TurnWork {
    const { text, request } = launch;
    return async (signal, onEvent) => {
      if (stillThere && !(await stillThere())) throw unknownSession(sessionId);
      const result = await this.whenSessionFree(sessionId, signal, () =>
        this.options.agent.turn({
          sessionId,
          text,
          cwd: launch.cwd ?? this.options.cwd,
          ...(launch.model ? { route: this.options.agent.runtime.router.turn(launch.model) } : {}),
          signal,
          onEvent,
          before,
          approvals: launch.approvals ?? null,
          ...(launch.deadline === false ? { deadline: false } : {}),
          ...(request === undefined ? {} : { request }),
          ...(launch.acknowledgedBy === undefined ? {} : { acknowledgedBy: launch.acknowledgedBy }),
          endWrites: (reply) => this.conversations.turnWrites(sessionId, text, reply, fresh?.base),
        }),
      );
      if (fresh) this.conversations.title(sessionId, fresh.firstMessage);
      return result;
    };
  }

  /**
   * Run a turn the gateway did not admit through `launch` (a turn resumed after a crash) as the
   * session's one turn: it counts for the turn limit, messages for its session wait behind it, and
   * it drains and is interrupted like any.
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

  /** Start `work` for an admitted session (inFlight already counted, or handed over). */
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
        finished();
        // The session's next waiting turn starts now, in this turn's place in gateway.max_turns.
        if (!this.queue.startNext(sessionId)) this.inFlight--;
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
    const history = historyOf(earlier);
    return {
      id,
      ops: [op, ...history.map((m) => store.messageOp({ session_id: id, role: m.role, content: m.content }))],
    };
  }
}
