// One MCP server, supervised: started (a child process in its own group, or a Streamable HTTP
// session), its tools listed and listed again when it says they changed, and when it is lost (the
// process ended, the endpoint stopped answering a ping, a start that failed) started again after a
// backoff that grows to a minute and never gives up. Its last list of tools is kept while it is
// down, so the model still sees them and each call is answered at once with why it was not run.
// A call is bounded by the server's timeout and by the turn's signal; a call that times out ends
// that call only, never the server's other tools.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  type Tool as McpTool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { type McpServerConfig, mcpStartSeconds } from "../../config/mcp-schema.js";
import type { Deps } from "../../core/deps.js";
import { ToolError } from "../tools/types.js";
import { GroupStdioTransport } from "./group-stdio.js";
import type { McpEvent, McpServerState, McpServerStatus } from "./mcp-types.js";

export interface McpLinkOptions {
  name: string;
  config: McpServerConfig;
  /** What a stdio server runs with: its environment (marks included) and folder. */
  stdio: (config: Extract<McpServerConfig, { command: string }>) => {
    env: Record<string, string>;
    cwd: string;
  };
  deps: Deps;
  /** Secrets out of what is shown (a server's stderr, an endpoint's error page). */
  redact: (text: string) => string;
  onEvent: (event: McpEvent) => void;
  /** The server's list of tools changed (or was first read). */
  onTools: (tools: McpTool[]) => void;
  /** The command an operator runs to see this server start (`tenax mcp test NAME`). */
  tryCommand: string;
  /** The target as shown: the command line, or the URL. */
  target: string;
  version: string;
  /** Backoff between attempts: first and largest delay; how long ready counts as recovered. */
  backoff?: { firstMs: number; maxMs: number; stableMs: number };
  /** How often a ready HTTP server is pinged (a stdio server's end is seen at once). */
  pingEveryMs?: number;
}

/** Who is calling, for the events a call tells. */
export interface McpCallContext {
  signal: AbortSignal;
  sessionId: string;
  turnId: string;
}

const DEFAULT_BACKOFF = { firstMs: 1_000, maxMs: 60_000, stableMs: 30_000 };
const GRACE_MS = 2_000;

export class McpLink {
  private status: McpServerStatus = "starting";
  private since: number;
  private lastError: string | null = null;
  private nextAttemptAt: number | null = null;
  /** Failed starts and early losses in a row (reset by a server that stays up for `stableMs`). */
  private failures = 0;
  private readonly counts = { calls: 0, errors: 0, timeouts: 0, restarts: 0 };
  /** The server's tools as it last listed them; kept while it is down. */
  tools: McpTool[] = [];
  private client: Client | null = null;
  private transport: Transport | null = null;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private settle: (() => void) | null = null;
  /** Settles when the first attempt to start has ended, either way. */
  readonly firstAttempt: Promise<void>;
  /** Ends the current connection (a failed ping, a refused call): the loop starts it again. */
  private lose: ((reason: string) => void) | null = null;

  constructor(private readonly options: McpLinkOptions) {
    this.since = options.deps.clock.now();
    this.firstAttempt = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  get name(): string {
    return this.options.name;
  }

  get ready(): boolean {
    return this.status === "ready";
  }

  start(): void {
    this.loop ??= this.supervise();
  }

  /** The tools an earlier process last saw, listed until the server gives its own. */
  remember(tools: McpTool[]): void {
    if (this.tools.length === 0) this.tools = tools;
  }

  async stop(): Promise<void> {
    this.stopping.abort(new Error("stopping"));
    this.lose?.("stopping");
    await this.loop;
    this.setStatus("stopped");
  }

  state(): McpServerState {
    const stdio = "command" in this.options.config;
    return {
      server: this.options.name,
      transport: stdio ? "stdio" : "http",
      target: this.options.target,
      status: this.status,
      tools: this.tools.length,
      since: this.since,
      pid: this.transport instanceof GroupStdioTransport ? this.transport.pid : null,
      last_error: this.lastError,
      next_attempt_at: this.nextAttemptAt,
      failures: this.failures,
      ...this.counts,
      try: this.options.tryCommand,
    };
  }

  /**
   * Call one of the server's tools. Throws a ToolError the model reads when it could not be called
   * (saying whether it may have run); rethrows the turn's own abort.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    shownAs: string,
    context: McpCallContext,
  ): Promise<CallToolResult> {
    const client = this.client;
    if (client === null || this.status !== "ready")
      throw new ToolError(this.unavailable(shownAs), { ran: false });
    const timeoutMs = this.options.config.timeout * 1000;
    const started = this.options.deps.clock.now();
    this.counts.calls++;
    try {
      const result = (await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: context.signal,
        timeout: timeoutMs,
      })) as CallToolResult;
      if (result.isError === true) this.counts.errors++;
      return result;
    } catch (error) {
      if (context.signal.aborted) throw context.signal.reason;
      this.counts.errors++;
      const elapsed = this.options.deps.clock.now() - started;
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        this.counts.timeouts++;
        const message = `${shownAs} is unavailable: server "${this.name}" did not answer within ${this.options.config.timeout} s (mcp.servers.${this.name}.timeout); the call was cancelled, and it may have run`;
        this.options.onEvent({
          type: "mcp_timeout",
          layer: "mcp",
          server: this.name,
          tool: shownAs,
          session_id: context.sessionId,
          turn_id: context.turnId,
          elapsed_ms: elapsed,
          message,
        });
        throw new ToolError(message, { ran: "unknown" });
      }
      if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
        // The server answered with an error of its own (unknown tool, bad arguments).
        throw new ToolError(`${shownAs} failed: ${this.options.redact(error.message)}`);
      }
      // The connection is gone: a server that died mid-call, an endpoint that stopped answering.
      const why = this.options.redact(errorText(error));
      this.lose?.(why);
      const notSent = isRefused(error);
      throw new ToolError(
        `${shownAs} is unavailable: server "${this.name}" ${notSent ? "could not be reached" : "was lost during the call"} (${why}); ${notSent ? "it was not run" : "it may have run"}; Tenax is starting the server again`,
        { ran: notSent ? false : "unknown" },
      );
    }
  }

  /** Why a tool of this server cannot be called now; the model reads it. */
  unavailable(shownAs: string): string {
    const now = this.options.deps.clock.now();
    const next =
      this.nextAttemptAt === null
        ? ""
        : `; next attempt in ${Math.max(0, Math.ceil((this.nextAttemptAt - now) / 1000))} s`;
    const why = this.lastError === null ? "" : ` (last error: ${this.lastError}${next})`;
    const state =
      this.status === "starting"
        ? "is still starting"
        : this.status === "stopped"
          ? "is stopped"
          : this.status === "failed"
            ? "has not started"
            : "is restarting";
    return `${shownAs} is unavailable: MCP server "${this.name}" ${state}${why}; it was not run`;
  }

  private async supervise(): Promise<void> {
    try {
      await this.superviseUntilStopped();
    } finally {
      // However it ends (stopped during its first start too), no one waits on the first start.
      this.settle?.();
    }
  }

  private async superviseUntilStopped(): Promise<void> {
    const { deps } = this.options;
    const backoff = this.options.backoff ?? DEFAULT_BACKOFF;
    const signal = this.stopping.signal;
    let everReady = false;
    while (!signal.aborted) {
      let readyAt: number | null = null;
      try {
        const { lost } = await this.connect();
        readyAt = deps.clock.now();
        everReady = true;
        this.settle?.();
        const reason = await lost;
        if (signal.aborted) break;
        this.client = null;
        this.setStatus("restarting");
        this.lastError = reason;
        this.counts.restarts++;
      } catch (error) {
        if (signal.aborted) break;
        this.lastError = this.options.redact(errorText(error));
      } finally {
        await this.disconnect();
      }
      this.settle?.();
      // A failed start, or a loss soon after one, is one more failure in a row, and the delay
      // doubles: a server that dies right after each start is not started every second for ever.
      // One that was up for a while starts over from the shortest delay.
      const stable = readyAt !== null && deps.clock.now() - readyAt >= backoff.stableMs;
      this.failures = stable ? 1 : this.failures + 1;
      const step = Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.min(this.failures - 1, 16));
      const delay = Math.round(step * (0.8 + 0.4 * deps.random()));
      this.nextAttemptAt = deps.clock.now() + delay;
      this.setStatus(everReady ? "restarting" : "failed");
      this.options.onEvent({
        type: "mcp_restart",
        layer: "mcp",
        server: this.name,
        attempt: this.failures + 1,
        delay_ms: delay,
        reason: this.lastError ?? "unknown",
        message: `MCP server "${this.name}" ${readyAt === null ? "did not start" : "was lost"}: ${this.lastError}; starting it again in ${formatSeconds(delay)}`,
      });
      try {
        await deps.sleep(delay, signal);
      } catch {
        break;
      }
      this.nextAttemptAt = null;
    }
  }

  /** Start the server and list its tools; resolves with a promise of why the connection ended. */
  private async connect(): Promise<{ lost: Promise<string> }> {
    const { config } = this.options;
    // A server that downloads itself first (npx -y, uvx) may take longer to start than a call may.
    const startMs = mcpStartSeconds(config) * 1000;
    const transport = this.makeTransport();
    this.transport = transport;
    const client = new Client({ name: "tenax", version: this.options.version }, { capabilities: {} });
    const lost = new Promise<string>((resolve) => {
      this.lose = resolve;
      client.onclose = () => resolve(this.describeEnd(transport));
    });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      void this.listTools(client, config.timeout * 1000).catch((error: unknown) =>
        this.lose?.(`listing its tools failed: ${errorText(error)}`),
      );
    });
    try {
      await client.connect(transport, { timeout: startMs, signal: this.stopping.signal });
      await this.listTools(client, startMs);
    } catch (error) {
      const end =
        transport instanceof GroupStdioTransport && transport.exit !== null
          ? this.describeEnd(transport)
          : null;
      throw new Error(end ?? `${errorText(error)}${this.stderrOf(transport)}`);
    }
    this.client = client;
    this.lastError = null;
    this.nextAttemptAt = null;
    this.setStatus("ready");
    this.options.onEvent({
      type: "mcp_ready",
      layer: "mcp",
      server: this.name,
      message: `MCP server "${this.name}" is ready with ${this.tools.length} tool(s)`,
    });
    if (!(transport instanceof GroupStdioTransport)) void this.pingWhileReady(client, lost);
    return { lost };
  }

  private async listTools(client: Client, timeoutMs: number): Promise<void> {
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout: timeoutMs });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    this.tools = tools;
    this.options.onTools(tools);
  }

  /** A Streamable HTTP server has no process to watch: a ping says whether it still answers. */
  private async pingWhileReady(client: Client, lost: Promise<string>): Promise<void> {
    const every = this.options.pingEveryMs ?? 15_000;
    const ended = new AbortController();
    void lost.then(() => ended.abort());
    for (;;) {
      try {
        await this.options.deps.sleep(every, ended.signal);
      } catch {
        return;
      }
      try {
        await client.ping({ timeout: Math.min(this.options.config.timeout * 1000, 10_000) });
      } catch (error) {
        this.lose?.(`it stopped answering (${this.options.redact(errorText(error))})`);
        return;
      }
    }
  }

  private async disconnect(): Promise<void> {
    const client = this.client;
    const transport = this.transport;
    this.client = null;
    this.transport = null;
    this.lose = null;
    if (client !== null) await client.close().catch(() => {});
    if (transport !== null) await transport.close().catch(() => {});
  }

  private makeTransport(): Transport {
    const { config } = this.options;
    if ("command" in config) {
      const { env, cwd } = this.options.stdio(config);
      return new GroupStdioTransport({
        command: config.command,
        args: config.args,
        env,
        cwd,
        graceMs: GRACE_MS,
      });
    }
    return new StreamableHTTPClientTransport(new URL(config.url), {
      requestInit: { headers: config.headers },
    });
  }

  private describeEnd(transport: Transport): string {
    if (!(transport instanceof GroupStdioTransport)) return "the connection closed";
    const how = transport.exit === null ? "the connection closed" : `the server exited (${transport.exit})`;
    return `${how}${this.stderrOf(transport)}`;
  }

  private stderrOf(transport: Transport): string {
    if (!(transport instanceof GroupStdioTransport)) return "";
    const tail = transport.stderrTail().split("\n").slice(-3).join(" | ");
    return tail === "" ? "" : `; it printed: ${this.options.redact(tail)}`;
  }

  private setStatus(status: McpServerStatus): void {
    if (this.status === status) return;
    this.status = status;
    this.since = this.options.deps.clock.now();
  }
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    const detail = cause instanceof Error && cause.message !== error.message ? `: ${cause.message}` : "";
    return `${error.message}${detail}`;
  }
  return String(error);
}

/** A request that never reached the server: the connection was refused before it was sent. */
function isRefused(error: unknown): boolean {
  // The refusal may be some causes down (the SDK's error, fetch's TypeError, the socket's).
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 5; depth++) {
    if ((at as { code?: unknown }).code === "ECONNREFUSED" || /ECONNREFUSED|not running/.test(at.message))
      return true;
    at = (at as Error & { cause?: unknown }).cause;
  }
  return false;
}

function formatSeconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
