// The gateway's HTTP handler, callable in-process: routing, auth, the per-session and global turn
// limits, and the shutdown states (taking turns, draining, stopped). The port is opened by the
// caller (src/gateway/run.ts), so this file never listens by itself.
import { timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Agent } from "../agent/agent.js";
import type { TurnResult } from "../agent/turn.js";
import type { TenaxConfig } from "../config/schema.js";
import type { Store } from "../store/store.js";
import { MAX_BODY_BYTES, readJsonBody } from "./body.js";
import { type CompletionMeta, CompletionStream, completionBody } from "./chat-completions.js";
import { type ChatMessage, parseChatRequest } from "./chat-request.js";
import { badRequest, GatewayError, sendError, sendJson, toGatewayError } from "./http-error.js";

export interface GatewayOptions {
  agent: Agent;
  store: Store;
  config: TenaxConfig;
  version: string;
  /** The folder the agent's tools start in. */
  cwd: string;
  now?: () => number;
  bodyLimit?: number;
}

interface ActiveTurn {
  controller: AbortController;
  done: Promise<void>;
  stream: CompletionStream | null;
}

/** What this gateway really serves; a client probes this instead of assuming. */
export const CAPABILITIES = ["chat.completions", "chat.completions.stream", "models", "sessions"] as const;

export const SHUTDOWN_MESSAGE =
  "the gateway is shutting down and takes no new turns; retry against the restarted gateway";

export class Gateway {
  private readonly active = new Map<string, ActiveTurn>();
  /** Turns reserved or running; counted before the session exists so the limit has no gaps. */
  private inFlight = 0;
  private stopping = false;
  private readonly now: () => number;

  constructor(private readonly options: GatewayOptions) {
    this.now = options.now ?? Date.now;
  }

  get turnsInFlight(): number {
    return this.inFlight;
  }

  /** The Node request listener; it never throws and always answers. */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.route(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, toGatewayError(error));
      else res.end();
    });
  };

  /** Stop taking turns and tell every open stream once. */
  beginShutdown(): void {
    if (this.stopping) return;
    this.stopping = true;
    for (const turn of this.active.values()) turn.stream?.shutdown(SHUTDOWN_MESSAGE);
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
    for (const turn of left) turn.controller.abort(new Error("the gateway is shutting down"));
    await Promise.all(left.map((t) => t.done));
    return left.length;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    if (path === "/api/capabilities")
      return this.only(req, ["GET"], () =>
        sendJson(res, 200, { version: this.options.version, capabilities: [...CAPABILITIES] }),
      );
    if (path === "/v1/models") return this.only(req, ["GET"], () => sendJson(res, 200, this.models()));
    if (path === "/v1/chat/completions") {
      this.only(req, ["POST"], () => undefined);
      return this.chat(req, res);
    }
    if (path === "/api/sessions") return this.only(req, ["GET"], () => this.sessions(url, res));
    const session = /^\/api\/sessions\/([^/]+)$/.exec(path);
    if (session) return this.only(req, ["GET"], () => this.session(decodePart(session[1] ?? ""), res));
    throw new GatewayError(404, "not_found_error", "unknown_route", `no route ${req.method} ${path}`);
  }

  private only(req: IncomingMessage, methods: string[], then: () => void): void {
    if (!methods.includes(req.method ?? "")) {
      throw new GatewayError(
        405,
        "invalid_request_error",
        "method_not_allowed",
        `method ${req.method} is not allowed here; use ${methods.join(" or ")}`,
        { allow: methods.join(", ") },
      );
    }
    then();
  }

  private authorize(req: IncomingMessage): void {
    const key = this.options.config.gateway.api_key;
    if (key === undefined) return;
    const header = req.headers.authorization ?? "";
    const match = /^Bearer (.+)$/i.exec(header);
    if (match && sameSecret(match[1] ?? "", key)) return;
    throw new GatewayError(
      401,
      "authentication_error",
      "invalid_api_key",
      header === ""
        ? "this gateway needs an API key: send Authorization: Bearer KEY (gateway.api_key in config.yaml)"
        : "the API key is wrong: send Authorization: Bearer KEY with the key of gateway.api_key",
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
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000 || !Number.isInteger(offset) || offset < 0)
      throw badRequest("invalid_query", "limit must be 1 to 1000 and offset 0 or more");
    const data = this.options.store.listSessions({ limit, offset });
    sendJson(res, 200, { object: "list", data: data.map((s) => ({ ...s, running: this.active.has(s.id) })) });
  }

  private session(id: string, res: ServerResponse): void {
    const session = this.options.store.getSession(id);
    if (!session) throw unknownSession(id);
    const messages = this.options.store.getMessages(id);
    sendJson(res, 200, { ...session, running: this.active.has(id), messages }, { "x-session-id": id });
  }

  private async chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requested = headerValue(req.headers["x-session-id"]);
    const echo: Record<string, string> = requested ? { "x-session-id": requested } : {};
    try {
      if (this.stopping) throw unavailable();
      const request = parseChatRequest(await readJsonBody(req, this.options.bodyLimit ?? MAX_BODY_BYTES));
      const lastUser = request.messages.findLastIndex((m) => m.role === "user");
      if (lastUser < 0) throw badRequest("invalid_field", "messages must contain a user message");
      const text = request.messages[lastUser]?.content ?? "";
      if (requested !== undefined && !this.options.store.getSession(requested))
        throw unknownSession(requested);
      if (this.stopping) throw unavailable();
      if (requested !== undefined && this.active.has(requested))
        throw new GatewayError(
          409,
          "conflict_error",
          "session_busy",
          `session ${requested} is already running a turn; wait for its reply and send the next message then (one turn at a time per session)`,
        );
      const max = this.options.config.gateway.max_turns;
      if (this.inFlight >= max)
        throw new GatewayError(
          429,
          "rate_limit_error",
          "too_many_turns",
          `the gateway is already running ${max} turns (gateway.max_turns); retry when one has finished`,
          { "retry-after": "1" },
        );
      this.inFlight++;
      let sessionId: string;
      try {
        sessionId = requested ?? (await this.newSession(request.messages.slice(0, lastUser)));
      } catch (error) {
        this.inFlight--;
        throw error;
      }
      await this.runTurn(res, sessionId, text, request.stream, request.includeUsage);
    } catch (error) {
      const failure = toGatewayError(error);
      sendError(
        res,
        new GatewayError(failure.status, failure.type, failure.code, failure.message, {
          ...echo,
          ...failure.headers,
        }),
      );
    }
  }

  /** A conversation an ordinary OpenAI client sent whole: its earlier turns become the session's history. */
  private async newSession(earlier: ChatMessage[]): Promise<string> {
    const store = this.options.store;
    const id = await this.options.agent.newSession({ source: "gateway" });
    // The agent speaks with its own system prompt; a client's system messages are not history.
    const history = earlier.filter((m) => m.role === "user" || m.role === "assistant");
    if (history.length > 0)
      await store.appendMessages(history.map((m) => ({ session_id: id, role: m.role, content: m.content })));
    return id;
  }

  private async runTurn(
    res: ServerResponse,
    sessionId: string,
    text: string,
    streaming: boolean,
    includeUsage: boolean,
  ): Promise<void> {
    const controller = new AbortController();
    const meta: CompletionMeta = {
      id: `chatcmpl-${sessionId}-${this.now().toString(36)}`,
      created: Math.floor(this.now() / 1000),
      model: `${this.options.agent.runtime.router.primary.provider}/${this.options.agent.runtime.router.primary.model}`,
      sessionId,
    };
    const stream = streaming ? new CompletionStream(res, meta, includeUsage) : null;
    let finished!: () => void;
    const done = new Promise<void>((resolve) => {
      finished = resolve;
    });
    this.active.set(sessionId, { controller, done, stream });
    // A client that hangs up stops its turn; the turn still ends persisted, as interrupted.
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new Error("the client closed the connection"));
    };
    res.on("close", onClose);
    try {
      stream?.open();
      if (this.stopping) stream?.shutdown(SHUTDOWN_MESSAGE);
      let result: TurnResult;
      try {
        result = await this.options.agent.turn({
          sessionId,
          text,
          cwd: this.options.cwd,
          signal: controller.signal,
          onEvent: (event) => stream?.onEvent(event),
        });
      } catch (error) {
        const message = `the turn failed: ${error instanceof Error ? error.message : String(error)}`;
        if (stream) return stream.fail(message);
        throw new GatewayError(500, "server_error", "turn_failed", message, { "x-session-id": sessionId });
      }
      if (stream) return stream.finish(result);
      sendJson(res, 200, completionBody(meta, result), { "x-session-id": sessionId });
    } finally {
      res.off("close", onClose);
      this.active.delete(sessionId);
      this.inFlight--;
      finished();
    }
  }
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw badRequest("invalid_url", `the session id ${JSON.stringify(part)} is not valid percent-encoding`);
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}

function unknownSession(id: string): GatewayError {
  return new GatewayError(
    404,
    "not_found_error",
    "session_not_found",
    `no session ${id}; leave out X-Session-Id to start a new one (GET /api/sessions lists them)`,
  );
}

function unavailable(): GatewayError {
  return new GatewayError(503, "unavailable_error", "shutting_down", SHUTDOWN_MESSAGE, {
    "retry-after": "5",
  });
}

/** Compare secrets in constant time, whatever their lengths. */
function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  const same = a.length === b.length;
  return timingSafeEqual(same ? a : b, b) && same;
}
