// The gateway's HTTP handler, callable in-process: the web checks (Host, Origin, CORS:
// web-guard.ts), auth, routing, turn admission (one turn per session with a bounded queue behind
// it, session-queue.ts; the global limit; stateless conversations, conversations.ts), and the
// shutdown states (taking turns, draining, stopped). The port is opened by the caller
// (src/gateway/run.ts), so this file never listens by itself.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Agent } from "../agent/agent.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { type InterruptCode, TurnInterrupt } from "../agent/turn-failure.js";
import type { TenaxConfig } from "../config/schema.js";
import { boundNames } from "../core/host-header.js";
import type { WriteOp } from "../store/ops.js";
import type { Store } from "../store/store.js";
import { sessionQueueFull, tooManyTurns, unknownSession } from "./admission-errors.js";
import { MAX_BODY_BYTES } from "./body.js";
import type { ChatMessage } from "./chat-request.js";
import { serveChat } from "./chat-route.js";
import { Conversations, conversationHash, historyOf } from "./conversations.js";
import type { HealthRoutes } from "./health-routes.js";
import {
  badRequest,
  decodePathPart,
  GatewayError,
  onlyMethods,
  SHUTDOWN_MESSAGE,
  sendError,
  sendJson,
  toGatewayError,
  unavailable,
} from "./http-error.js";
import { SessionQueue } from "./session-queue.js";
import { guardRequest, type WebGuardPolicy } from "./web-guard.js";

export interface GatewayOptions {
  agent: Agent;
  store: Store;
  config: TenaxConfig;
  version: string;
  /** The folder the agent's tools start in. */
  cwd: string;
  /** Where the server is bound, once it is (a Host naming it must carry this port). */
  listening?: () => { host: string; port: number } | null;
  now?: () => number;
  bodyLimit?: number;
  /** Every event of every turn this gateway runs, with its session (the gateway's event feed). */
  onTurnEvent?: (sessionId: string, event: AgentEvent) => void;
  /** GET /health, /metrics and /api/events (src/gateway/health-routes.ts). */
  health?: HealthRoutes;
  /** Extra routes (the runs API): answers and returns true when the path is theirs. */
  routes?: (req: IncomingMessage, res: ServerResponse, path: string, url: URL) => Promise<boolean> | boolean;
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
  /** While the turn waits for its busy session: aborting it leaves the queue at once. */
  signal?: AbortSignal;
  /** Told (synchronously, within launch) when the turn waits behind the session's running one. */
  onQueued?: (sessionId: string, position: number) => void;
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

/** What this gateway really serves; a client probes this instead of assuming. */
export const CAPABILITIES = [
  "chat.completions",
  "chat.completions.stream",
  "models",
  "sessions",
  "runs",
] as const;

/** Served when the gateway runs with its health routes (as `tenax gateway run` always does). */
export const HEALTH_CAPABILITIES = ["health", "metrics", "events"] as const;

export class Gateway {
  private readonly active = new Map<string, ActiveTurn>();
  /** Turns reserved or running; counted before the session exists so the limit has no gaps. */
  private inFlight = 0;
  /** Turns waiting for their busy session; they count for nothing else until they start. */
  private readonly queue: SessionQueue<LaunchedTurn>;
  private readonly conversations: Conversations;
  private stopping = false;
  private readonly now: () => number;

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

  /** The Node request listener; it never throws and always answers. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.options.health?.observe(req, res);
    this.route(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, toGatewayError(error));
      else res.end();
    });
  };

  /** Stop taking turns, answer every waiting one 503 (it never starts), tell every open stream once. */
  beginShutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    this.queue.rejectAll(() => unavailable());
    // Titles being made fall back to their plain ones now.
    void this.conversations.close();
    for (const turn of this.active.values()) for (const w of turn.watchers) w.shutdown(SHUTDOWN_MESSAGE);
  }

  /** Wait for running turns up to `timeoutMs` (or until `cut` aborts); true when none is left. */
  async drain(timeoutMs: number, cut?: AbortSignal): Promise<boolean> {
    // Cut before the drain began (a second signal while the gateway was still starting).
    if (cut?.aborted === true) return this.active.size === 0;
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

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Before anything else: a page elsewhere must not get any answer it could use.
    if (guardRequest(req, res, this.webPolicy()) === "answered") return;
    let url: URL;
    try {
      url = new URL(req.url ?? "/", "http://gateway");
    } catch {
      throw badRequest("invalid_url", `the request path ${JSON.stringify(req.url)} is not a valid URL path`);
    }
    const path = url.pathname.replace(/\/+$/, "") || "/";
    if (path === "/health/live")
      return this.only(req, ["GET", "HEAD"], () => sendJson(res, 200, { status: "ok" }));
    this.authorize(req);
    const health = this.options.health;
    if (health && (path === "/health" || path === "/metrics" || path === "/api/events"))
      return this.only(req, ["GET"], () => health.route(req, res, path));
    if (path === "/api/capabilities")
      return this.only(req, ["GET"], () =>
        sendJson(res, 200, {
          version: this.options.version,
          capabilities: [...CAPABILITIES, ...(this.options.health ? HEALTH_CAPABILITIES : [])],
        }),
      );
    if (path === "/v1/models") return this.only(req, ["GET"], () => sendJson(res, 200, this.models()));
    if (path === "/v1/chat/completions") {
      this.only(req, ["POST"], () => undefined);
      return serveChat(req, res, {
        launch: (request) => this.launch(request),
        stopping: () => this.stopping,
        now: this.now,
        model: () =>
          `${this.options.agent.runtime.router.primary.provider}/${this.options.agent.runtime.router.primary.model}`,
        bodyLimit: this.options.bodyLimit ?? MAX_BODY_BYTES,
        streamBufferBytes: this.options.config.gateway.stream_buffer_kb * 1024,
      });
    }
    if (path === "/api/sessions") return this.only(req, ["GET"], () => this.sessions(url, res));
    const session = /^\/api\/sessions\/([^/]+)$/.exec(path);
    if (session)
      return this.only(req, ["GET"], () => this.session(decodePathPart(session[1] ?? "", "session id"), res));
    if (this.options.routes && (await this.options.routes(req, res, path, url))) return;
    throw new GatewayError(404, "not_found_error", "unknown_route", `no route ${req.method} ${path}`);
  }

  private only(req: IncomingMessage, methods: string[], then: () => void): void {
    onlyMethods(req, methods);
    then();
  }

  private webPolicy(): WebGuardPolicy {
    const at = this.options.listening?.() ?? null;
    const gateway = this.options.config.gateway;
    return {
      hosts: {
        bound: () => (at === null ? [] : boundNames(at.host)),
        port: at?.port ?? null,
        extra: gateway.allowed_hosts,
      },
      corsOrigins: gateway.cors_origins,
    };
  }

  /** The bearer key, unless gateway.auth is none; with no key at all nothing gets in. */
  private authorize(req: IncomingMessage): void {
    const { auth, api_key: key } = this.options.config.gateway;
    if (auth === "none") return;
    const header = req.headers.authorization ?? "";
    const match = /^Bearer (.+)$/i.exec(header);
    if (key !== undefined && match && sameSecret(match[1] ?? "", key)) return;
    throw new GatewayError(
      401,
      "authentication_error",
      "invalid_api_key",
      header === ""
        ? "this gateway needs an API key: send Authorization: Bearer KEY (the key is gateway.api_key, by default TENAX_API_KEY in the environment or the profile's .env, which the gateway's first start writes)"
        : "the API key is wrong: send Authorization: Bearer KEY with the gateway's key (gateway.api_key, by default TENAX_API_KEY in the environment or the profile's .env)",
      { "www-authenticate": "Bearer" },
    );
  }

  private models() {
    const router = this.options.agent.runtime.router;
    const created = Math.floor(this.now() / 1000);
    const targets = [router.primary, ...router.fallbackChain];
    const seen = new Set<string>();
    const data = [];
    for (const t of targets) {
      const id = `${t.provider}/${t.model}`;
      if (seen.has(id)) continue;
      seen.add(id);
      data.push({ id, object: "model", created, owned_by: t.provider });
    }
    return { object: "list", data };
  }

  private sessions(url: URL, res: ServerResponse): void {
    const limit = Number(url.searchParams.get("limit") ?? 50);
    const offset = Number(url.searchParams.get("offset") ?? 0);
    // A safe integer: SQLite cannot take 1e20 as an OFFSET ("datatype mismatch", once a 500).
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000 || !Number.isSafeInteger(offset) || offset < 0)
      throw badRequest("invalid_query", "limit must be 1 to 1000 and offset 0 or more");
    const data = this.options.store.listSessions({ limit, offset });
    sendJson(res, 200, { object: "list", data: data.map((s) => ({ ...s, ...this.busy(s.id) })) });
  }

  private session(id: string, res: ServerResponse): void {
    const session = this.options.store.getSession(id);
    if (!session) throw unknownSession(id);
    const messages = this.options.store.getMessages(id);
    sendJson(res, 200, { ...session, ...this.busy(id), messages }, { "x-session-id": id });
  }

  private busy(id: string): { running: boolean; queued: number } {
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
      const known = this.conversations.find(earlier);
      if (known) return this.launch({ ...request, sessionId: known.sessionId });
      this.reserve();
      // A new session is created by the turn's first write, with its history and the question.
      const created = this.newSession(earlier);
      const history = historyOf(earlier);
      const fresh = {
        base: conversationHash(null, history),
        firstMessage: history.find((m) => m.role === "user")?.content ?? request.text,
      };
      return this.start(
        created.id,
        this.agentWork(created.id, request.text, created.ops, fresh),
        request.watcher,
      );
    }
    const store = this.options.store;
    if (!store.getSession(requested)) throw unknownSession(requested);
    const begin = () => this.start(requested, this.agentWork(requested, request.text, []), request.watcher);
    if (!this.active.has(requested)) {
      this.reserve();
      return begin();
    }
    const waiting = this.queue.enqueue(
      requested,
      () => {
        // The session may have been deleted while the turn waited.
        if (!store.getSession(requested)) throw unknownSession(requested);
        return begin();
      },
      request.signal,
    );
    if (!waiting.queued) throw sessionQueueFull(requested, this.options.config.gateway.session_queue);
    request.onQueued?.(requested, waiting.position);
    return waiting.started;
  }

  /** Count a turn about to start against gateway.max_turns (429 when it is reached). */
  private reserve(): void {
    const max = this.options.config.gateway.max_turns;
    if (this.inFlight >= max) throw tooManyTurns(max);
    this.inFlight++;
  }

  /**
   * The agent's turn, then the session's conversation fingerprint (committed before the reply is
   * sent, so the client's next request finds it); a new conversation (`fresh`) also gets its title
   * made in the background.
   */
  private agentWork(
    sessionId: string,
    text: string,
    before: WriteOp[],
    fresh?: { base: string; firstMessage: string },
  ): TurnWork {
    return async (signal, onEvent) => {
      const result = await this.options.agent.turn({
        sessionId,
        text,
        cwd: this.options.cwd,
        signal,
        onEvent,
        before,
      });
      try {
        await this.conversations.recordTurn(sessionId, text, result, fresh?.base);
      } catch {
        // The turn is answered all the same; only a stateless follow-up would start a new session.
      }
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

/** Compare secrets in constant time, whatever their lengths. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  const same = a.length === b.length;
  return timingSafeEqual(same ? a : b, b) && same;
}
