// `tenax mcp list [--json]` and `tenax mcp test NAME [--json]`: the profile's MCP servers as
// config.yaml sets them, with the running gateway's live state of each (from its /health: the
// servers run inside the gateway and `tenax chat`, never in this command); and one server started
// here, alone, to see it start and list its tools (mcp-test.ts). Header and env values are never
// shown (they hold tokens), and whatever a secret variable put in a command line is redacted.
import type { Command } from "commander";
import type { McpServerState } from "../../agent/mcp/mcp-types.js";
import { loadConfig } from "../../config/load.js";
import { loadProfileSecrets } from "../../config/profile-secrets.js";
import { formatDuration } from "../../health/duration.js";
import { lookAtGateway } from "../../health/gateway-status.js";
import { liveMcpServers } from "../../health/mcp-live.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { ProfilePaths } from "../../profile/paths.js";
import type { Cli } from "../main.js";
import { type Output, table } from "../output.js";
import { describeServer, type ShownServer, shownState } from "./mcp-shown.js";

/** A configured server as `list` shows it, with the running gateway's state of it. */
export interface ListedServer extends ShownServer {
  /** The running gateway's state of it; null when no gateway answered, or it does not run it. */
  live: McpServerState | null;
}

/** What `list` learned of the gateway; null when it did not look (no servers configured). */
interface GatewaySeen {
  url: string;
  /** Whether it answered with its servers' states. */
  answered: boolean;
  /** Why it did not (not running, another program on the port, a refused key). */
  problem: string | null;
  /** Servers it runs that config.yaml no longer lists (it started before they were removed). */
  unconfigured: string[];
}

export function registerMcpCommands(program: Command, cli: Cli): void {
  const mcp = program
    .command("mcp")
    .description(
      "the profile's MCP servers (mcp.servers in config.yaml): list them with the gateway's live state, or start one here to see its tools",
    );

  mcp
    .command("list")
    .description(
      "each configured server: transport, command or URL, timeout, approve list, and its state in the running gateway",
    )
    .option("--json", "print one JSON document")
    .action((flags: { json?: boolean }) => cli.run(flags.json, (out) => listServers(cli, out)));

  mcp
    .command("test <name>")
    .description(
      "start one server here, alone, wait for it to start (at most its start_timeout), list the tools the model would see, and stop it; calls no tool. Exit 1 when it does not start",
    )
    .option("--json", "print one JSON document")
    .action((name: string, flags: { json?: boolean }) =>
      // Loaded only here: the MCP SDK and the hub are needed only to start a server.
      cli.run(flags.json, async (out) => (await import("./mcp-test.js")).testServer(cli, out, name)),
    );
}

async function listServers(cli: Cli, out: Output): Promise<number> {
  const paths = cli.profile();
  const loaded = loadConfig(paths);
  const { config } = loaded;
  for (const warning of loaded.warnings) out.warn(warning);
  const names = Object.keys(config.mcp.servers);
  if (names.length === 0) {
    if (out.json) out.document({ servers: [], gateway: null });
    else for (const line of noServers(paths)) out.line(line);
    return 0;
  }
  const secrets = loadProfileSecrets(paths, loaded);
  const redact = (text: string) => secrets.redactor.redact(text);
  const view = await lookAtGateway(paths, config);
  const live = liveMcpServers(view);
  const servers: ListedServer[] = Object.entries(config.mcp.servers).map(([name, server]) => {
    const state = live?.find((s) => s.server === name) ?? null;
    return {
      ...describeServer(name, server, redact),
      live: state === null ? null : shownState(state, redact),
    };
  });
  const gateway: GatewaySeen = {
    url: view.url,
    answered: live !== null,
    problem: view.problem,
    unconfigured: (live ?? []).map((s) => s.server).filter((name) => !names.includes(name)),
  };
  if (out.json) {
    out.document({ servers, gateway });
    return 0;
  }
  for (const line of renderList(paths, servers, gateway, Date.now())) out.line(line);
  return 0;
}

function noServers(paths: ProfilePaths): string[] {
  return [
    `no MCP servers are configured for profile '${paths.name}'. Add one to ${paths.config}, for example:`,
    "",
    "mcp:",
    "  servers:",
    '    files: { command: npx, args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"] }',
    "",
    `then ${tenaxCommand(paths.name, ["mcp", "test", "files"])} starts it and lists its tools (a Streamable HTTP server is { url: https://..., headers: {...} })`,
  ];
}

function renderList(
  paths: ProfilePaths,
  servers: ListedServer[],
  gateway: GatewaySeen,
  now: number,
): string[] {
  const lines = [`MCP servers of profile '${paths.name}' (${paths.config}):`];
  lines.push(
    table(
      ["NAME", "TRANSPORT", "TARGET", "TIMEOUT", "APPROVE", "STATE"],
      servers.map((s) => [
        s.name,
        s.transport,
        s.target,
        `${s.timeout} s`,
        s.approve === "all" ? "all" : s.approve.length === 0 ? "-" : s.approve.join(","),
        gateway.answered ? liveCell(s.live) : "-",
      ]),
    ),
  );
  for (const s of servers) {
    const detail = s.live === null ? null : liveDetail(s.live, now);
    if (detail !== null) lines.push(`${s.name}: ${detail}`);
  }
  const tryOne = tenaxCommand(paths.name, ["mcp", "test", "NAME"]);
  if (!gateway.answered) {
    lines.push(
      "",
      `No live state: the servers run inside the gateway and tenax chat, and no gateway of this profile answered (${gateway.problem ?? gateway.url}).`,
      `${tryOne} starts one here, alone, and lists its tools.`,
    );
    return lines;
  }
  lines.push("", `STATE is the running gateway's (${gateway.url}).`);
  const missing = servers.filter((s) => s.live === null).map((s) => s.name);
  if (missing.length > 0)
    lines.push(
      `The gateway does not run ${missing.join(", ")}: it started before config.yaml listed them; restart it to start them (${tryOne} tries one now).`,
    );
  if (gateway.unconfigured.length > 0)
    lines.push(
      `The gateway still runs ${gateway.unconfigured.join(", ")}, which config.yaml no longer lists; restart it to stop them.`,
    );
  return lines;
}

function liveCell(live: McpServerState | null): string {
  if (live === null) return "not in the gateway";
  switch (live.status) {
    case "ready":
      return `ready, ${live.tools} tool(s)`;
    case "restarting":
      // Its last list of tools stays with the model, each call answered "unavailable".
      return `restarting, ${live.tools} tool(s) unavailable`;
    case "starting":
    case "failed":
    case "stopped":
      return live.status;
    default: {
      const unhandled: never = live.status;
      return unhandled;
    }
  }
}

/** The line under the table for a server that is not ready: why, when it is tried next, what shows it. */
function liveDetail(live: McpServerState, now: number): string | null {
  switch (live.status) {
    case "ready":
    case "stopped":
      return null;
    case "starting":
      return "starting";
    case "restarting":
    case "failed": {
      // No next attempt while one is under way.
      const next =
        live.next_attempt_at === null
          ? `; trying again now (attempt ${live.failures + 1})`
          : `; next attempt in ${formatDuration(Math.max(0, live.next_attempt_at - now))}`;
      return `${live.status}: ${live.last_error ?? "no error was recorded"}${next}; see it start with ${live.try}`;
    }
    default: {
      const unhandled: never = live.status;
      return unhandled;
    }
  }
}
