// The profile's MCP servers in one process (the gateway, `tenax chat`): each supervised on its own
// (mcp-link.ts), started without holding up the process's start, their tools put together for the
// turns (mcp-tools.ts), their states for health, and their events for the feed and the audit trail.
import { isAbsolute, resolve } from "node:path";
import { type Tool as McpTool, ToolSchema } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "../../config/mcp-schema.js";
import type { Deps } from "../../core/deps.js";
import type { ProcessIdentity } from "../../core/process-identity.js";
import { VERSION } from "../../core/version.js";
import type { StorePort } from "../../store/port.js";
import type { ExecGate } from "../approvals/exec-gate.js";
import { childEnvironment, type EnvSecrets } from "../child-env.js";
import { markEnv } from "../process-marks.js";
import type { Tool } from "../tools/types.js";
import { McpLink } from "./mcp-link.js";
import { mcpTarget } from "./mcp-target.js";
import { mcpTool } from "./mcp-tools.js";
import type { McpEvent, McpServerState } from "./mcp-types.js";
import { mcpToolNames } from "./tool-names.js";

/** The task id in the marks of a server's processes: what the profile's next start reaps. */
export const mcpTaskId = (server: string) => `mcp:${server}`;

export interface McpHubOptions {
  servers: Record<string, McpServerConfig>;
  /** The profile's folder: where a server runs unless its `cwd` says, and what relative ones resolve against. */
  profileDir: string;
  /** The profile as its processes' marks name it (process-marks.ts). */
  profileMark: string;
  /** This process, in the marks; null when it cannot be read (no /proc). */
  owner: ProcessIdentity | null;
  /** What a server's environment never inherits (child-env.ts). */
  secrets: EnvSecrets;
  deps: Deps;
  redact: (text: string) => string;
  /** The approval flow for tools a server's `approve` lists; null: they are refused. */
  gate: ExecGate | null;
  /** The command that tries one server (`tenax mcp test NAME`). */
  tryCommand: (server: string) => string;
  /**
   * Where each server's last list of tools is kept across restarts, so a server that is down when
   * this process starts still has its tools listed (answering why they cannot run); none: not kept.
   */
  memory?: McpToolMemory;
  /** For tests: a faster backoff and ping. */
  link?: Pick<ConstructorParameters<typeof McpLink>[0], "backoff" | "pingEveryMs">;
}

/** The store's record kind of the servers' last lists of tools, by server name. */
export const MCP_TOOLS_KIND = "mcp_tools";

/**
 * Each server's last list of tools in the profile's store, kept with what the server was: a
 * changed command or URL forgets it, and so does a record that is not a list of MCP tools.
 */
export function storeToolMemory(store: Pick<StorePort, "getRecord" | "putRecord">): McpToolMemory {
  return {
    async load(server, target) {
      const record = await store.getRecord<{ target?: unknown; tools?: unknown }>(MCP_TOOLS_KIND, server);
      if (record === null || record.target !== target) return null;
      const tools = record.tools;
      if (!Array.isArray(tools) || !tools.every((tool) => ToolSchema.safeParse(tool).success)) return null;
      return tools as McpTool[];
    },
    save: (server, target, tools) => store.putRecord(MCP_TOOLS_KIND, server, { target, tools }),
  };
}

/** A server's last list of tools, kept with what the server was (a changed command or URL forgets it). */
export interface McpToolMemory {
  load(server: string, target: string): Promise<McpTool[] | null>;
  save(server: string, target: string, tools: McpTool[]): Promise<void>;
}

export class McpHub {
  private readonly links: McpLink[];
  private readonly listeners = new Set<(event: McpEvent) => void>();
  private cached: readonly Tool[] | null = null;
  private started = false;
  private firstStartsOver = false;
  private allFirstStarts: Promise<void> = Promise.resolve();
  private readonly targets = new Map<string, string>();

  constructor(private readonly options: McpHubOptions) {
    // A command line may carry what a secret variable put there: redacted wherever it is shown.
    for (const [name, config] of Object.entries(options.servers))
      this.targets.set(name, options.redact(mcpTarget(config)));
    this.links = Object.entries(options.servers).map(
      ([name, config]) =>
        new McpLink({
          name,
          config,
          deps: options.deps,
          redact: options.redact,
          version: VERSION,
          tryCommand: options.tryCommand(name),
          target: this.targets.get(name) ?? "",
          stdio: (stdio) => this.stdio(name, stdio),
          onEvent: (event) => this.tell(event),
          onTools: (tools) => {
            this.cached = null;
            void options.memory?.save(name, this.targets.get(name) ?? "", tools).catch(() => {});
          },
          ...options.link,
        }),
    );
  }

  get size(): number {
    return this.links.length;
  }

  /**
   * Start every server; returns at once. Each server's remembered tools are listed first (while it
   * starts, or if it cannot), then its own list replaces them.
   */
  start(): void {
    this.started = true;
    this.allFirstStarts = Promise.all(this.links.map((l) => l.firstAttempt)).then(() => {
      this.firstStartsOver = true;
    });
    for (const link of this.links) {
      const memory = this.options.memory;
      if (memory === undefined) {
        link.start();
        continue;
      }
      void memory
        .load(link.name, this.targets.get(link.name) ?? "")
        .catch(() => null)
        .then((tools) => {
          if (tools !== null) {
            link.remember(tools);
            this.cached = null;
          }
          link.start();
        });
    }
  }

  /**
   * Resolves once every server's first start has ended (ready or not), or after `maxMs`; at once
   * when the servers were never started here (a process that runs turns without them).
   */
  async firstStart(maxMs: number): Promise<void> {
    // Every turn asks: once all first starts have ended, it costs no promise and no timer.
    if (!this.started || this.firstStartsOver) return;
    const wait = new AbortController();
    await Promise.race([this.allFirstStarts, this.options.deps.sleep(maxMs, wait.signal).catch(() => {})]);
    wait.abort();
  }

  /** Each server's tools as listed: the model's name, the server's own name and its description. */
  catalog(): Array<{ server: string; name: string; server_name: string; description: string }> {
    return this.links.flatMap((link) => {
      const names = mcpToolNames(
        link.name,
        link.tools.map((t) => t.name),
      );
      return link.tools.map((tool) => ({
        server: link.name,
        name: names.get(tool.name) ?? tool.name,
        server_name: tool.name,
        description: tool.description ?? "",
      }));
    });
  }

  /** The tools of every server as the model sees them: the last list of each, kept while it is down. */
  tools(): readonly Tool[] {
    this.cached ??= this.links.flatMap((link) => {
      const names = mcpToolNames(
        link.name,
        link.tools.map((t) => t.name),
      );
      const approve = this.options.servers[link.name]?.approve ?? [];
      return link.tools.map((tool) =>
        mcpTool({
          link,
          tool,
          name: names.get(tool.name) ?? tool.name,
          gate: approve === "all" || approve.includes(tool.name) ? this.options.gate : null,
        }),
      );
    });
    return this.cached;
  }

  states(): McpServerState[] {
    return this.links.map((l) => l.state());
  }

  /** Hear every server's events; returns the way to stop hearing them. */
  on(listener: (event: McpEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stop every server (a stdio server's whole process group). */
  async close(): Promise<void> {
    await Promise.all(this.links.map((l) => l.stop()));
  }

  private tell(event: McpEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // A listener never breaks the server's supervision.
      }
    }
  }

  private stdio(name: string, config: Extract<McpServerConfig, { command: string }>) {
    const { owner, profileMark, profileDir } = this.options;
    const marks = owner === null ? {} : markEnv(profileMark, owner, mcpTaskId(name));
    const cwd =
      config.cwd === undefined
        ? profileDir
        : isAbsolute(config.cwd)
          ? config.cwd
          : resolve(profileDir, config.cwd);
    return { env: childEnvironment(this.options.secrets, { ...config.env, ...marks }), cwd };
  }
}
