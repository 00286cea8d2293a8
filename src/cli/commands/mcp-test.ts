// `tenax mcp test NAME [--json]`: one MCP server of the profile started here, alone, as the gateway
// would start it (its own process group, the profile's marks, the environment a tool gets, a real
// Streamable HTTP session), to see whether it starts and which tools the model would get from it.
// It waits for the first start (at most the server's start_timeout), calls no tool, and always stops the
// server again (its whole process group), also when interrupted. Exit 0 ready, 1 not.

import { McpHub } from "../../agent/mcp/mcp-hub.js";
import type { McpServerState } from "../../agent/mcp/mcp-types.js";
import { selfIdentity } from "../../agent/process-identity.js";
import { profileMark } from "../../agent/process-marks.js";
import { loadConfig } from "../../config/load.js";
import { type McpServerConfig, mcpStartSeconds } from "../../config/mcp-schema.js";
import { loadProfileSecrets } from "../../config/profile-secrets.js";
import { defaultDeps, type Sleep } from "../../core/deps.js";
import { TenaxError, UsageError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { ProfilePaths } from "../../profile/paths.js";
import type { Cli } from "../main.js";
import { type Output, table } from "../output.js";
import { describeServer } from "./mcp-shown.js";

/** One tool as the test lists it. */
export interface TestedTool {
  /** The name the model sees: mcp__SERVER__TOOL. */
  name: string;
  /** The tool's name as the server lists it. */
  server_name: string;
  /** The first line of the server's description of it. */
  description: string;
  /** Whether it waits for an approval before it runs (the server's `approve` lists it). */
  approve: boolean;
}

export interface TestReport {
  server: string;
  transport: "stdio" | "http";
  target: string;
  status: "ready" | "failed";
  /** The server's process in this test (stdio), ended since; null over HTTP or when it could not be run. */
  pid: number | null;
  elapsed_ms: number;
  tools: TestedTool[];
  /** Why it is not ready: the exit code and the tail of its stderr, the HTTP error, the timeout. */
  error: string | null;
}

export async function testServer(cli: Cli, out: Output, name: string): Promise<number> {
  const paths = cli.profile();
  const loaded = loadConfig(paths);
  for (const warning of loaded.warnings) out.warn(warning);
  const servers = loaded.config.mcp.servers;
  const server = Object.hasOwn(servers, name) ? servers[name] : undefined;
  if (server === undefined) throw unknownServer(paths, name, Object.keys(servers));
  const secrets = loadProfileSecrets(paths, loaded);
  const redact = (text: string) => secrets.redactor.redact(text);
  const shown = describeServer(name, server, redact);
  out.line(
    `starting MCP server "${name}" (${shown.transport}: ${shown.target}); it has ${mcpStartSeconds(server)} s to start...`,
  );
  // SIGINT or SIGTERM cuts every sleep of the hub short (the wait for the first start, a backoff),
  // so this process ends at once, with the server.
  const interrupt = new AbortController();
  const sleep: Sleep = (ms, signal) =>
    defaultDeps.sleep(
      ms,
      signal === undefined ? interrupt.signal : AbortSignal.any([signal, interrupt.signal]),
    );
  const hub = new McpHub({
    servers: { [name]: server },
    profileDir: paths.dir,
    profileMark: profileMark(paths.dir),
    owner: selfIdentity(),
    secrets,
    deps: { ...defaultDeps, sleep },
    redact,
    gate: null,
    tryCommand: (s) => tenaxCommand(paths.name, ["mcp", "test", s]),
  });
  const started = Date.now();
  const report = await withHub(hub, interrupt, mcpStartSeconds(server) * 1000, (): TestReport => {
    const state = hub.states()[0];
    return {
      server: name,
      transport: shown.transport,
      target: shown.target,
      ...outcome(name, server, state, interrupt.signal.aborted),
      pid: state?.pid ?? null,
      elapsed_ms: Date.now() - started,
      tools: state?.status === "ready" ? hub.catalog().map((t) => testedTool(t, server)) : [],
    };
  });
  if (out.json) {
    out.document(report);
    return report.status === "ready" ? 0 : 1;
  }
  if (report.status !== "ready")
    throw new TenaxError("mcp_not_started", `MCP server "${name}" did not start: ${report.error}`, {
      hint: fixHint(paths, name, server),
    });
  for (const line of renderReady(report)) out.line(line);
  for (const warning of approveWarnings(name, server, report.tools)) out.warn(warning);
  return 0;
}

/**
 * Start the hub, wait for its first start (at most `maxMs`, or until SIGINT or SIGTERM), read
 * what it has, and stop the server whatever happened: a stdio server leads a process group of its
 * own, which a Ctrl-C in the terminal never reaches.
 */
async function withHub<T>(hub: McpHub, interrupt: AbortController, maxMs: number, read: () => T): Promise<T> {
  const onSignal = () => interrupt.abort(new Error("interrupted"));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    hub.start();
    await hub.firstStart(maxMs);
    return read();
  } finally {
    await hub.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

function outcome(
  name: string,
  server: McpServerConfig,
  state: McpServerState | undefined,
  interrupted: boolean,
): Pick<TestReport, "status" | "error"> {
  if (state?.status === "ready") return { status: "ready", error: null };
  if (interrupted) return { status: "failed", error: "interrupted before it finished starting" };
  if (state?.last_error) return { status: "failed", error: state.last_error };
  return {
    status: "failed",
    error: `it did not finish starting within ${mcpStartSeconds(server)} s (mcp.servers.${name}.start_timeout; a server that first downloads itself, through npx -y or uvx, may need more)`,
  };
}

/** A tool as listed: the model's name, the server's own, the first line of its description. */
function testedTool(tool: ReturnType<McpHub["catalog"]>[number], config: McpServerConfig): TestedTool {
  return {
    name: tool.name,
    server_name: tool.server_name,
    description: (tool.description.trim().split("\n", 1)[0] ?? "").trim(),
    approve: config.approve === "all" || config.approve.includes(tool.server_name),
  };
}

function renderReady(report: TestReport): string[] {
  const seconds = (report.elapsed_ms / 1000).toFixed(1);
  const head = `MCP server "${report.server}" is ready with ${report.tools.length} tool(s), started in ${seconds} s`;
  if (report.tools.length === 0)
    return [`${head}, but it lists none: the model gets nothing from it`, stoppedNote];
  return [
    `${head}; the model sees:`,
    table(
      ["TOOL", "DESCRIPTION"],
      report.tools.map((t) => [
        t.name,
        `${clip(t.description, 100)}${t.approve ? " [waits for an approval]" : ""}`,
      ]),
    ),
    stoppedNote,
  ];
}

const stoppedNote = "No tool was called, and the server is stopped again.";

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

/** An `approve` entry naming no tool of the server (a typo) would hold back nothing. */
function approveWarnings(name: string, server: McpServerConfig, tools: TestedTool[]): string[] {
  if (server.approve === "all") return [];
  const have = new Set(tools.map((t) => t.server_name));
  return server.approve
    .filter((tool) => !have.has(tool))
    .map(
      (tool) =>
        `mcp.servers.${name}.approve lists "${tool}", which the server does not have, so it holds nothing back; its tools are: ${[...have].join(", ")}`,
    );
}

function fixHint(paths: ProfilePaths, name: string, server: McpServerConfig): string {
  const keys = "command" in server ? "command, args, env, cwd" : "url, headers";
  return `check mcp.servers.${name} (${keys}, timeout) in ${paths.config}, then run: ${tenaxCommand(paths.name, ["mcp", "test", name])}`;
}

function unknownServer(paths: ProfilePaths, name: string, names: string[]): UsageError {
  return new UsageError(`there is no MCP server "${name}" in ${paths.config} (mcp.servers)`, {
    hint:
      names.length === 0
        ? `no MCP server is configured; ${tenaxCommand(paths.name, ["mcp", "list"])} shows how to add one`
        : `the configured ones: ${names.join(", ")}`,
    data: { configured: names },
  });
}
