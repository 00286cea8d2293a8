// The MCP servers as one health component (`mcp`): each configured server's state as the process
// that runs it (the gateway) sees it, with its tools, its last error and its next attempt, and the
// command that shows it starting. Degraded while a server is down (restarting, or never started),
// since its tools then answer every call with an error; a server still in its first start is not
// a fault. The servers run inside the gateway (and `tenax chat`): outside it, only config is known.
import type { McpServerState } from "../agent/mcp/mcp-types.js";
import type { TenaxConfig } from "../config/schema.js";
import type { ProfilePaths } from "../profile/paths.js";
import { formatDuration } from "./duration.js";
import type { Component } from "./status.js";

export interface McpComponent extends Component {
  /** Each server's state as the gateway sees it; empty when no gateway answered. */
  servers: McpServerState[];
}

export function mcpComponent(
  paths: ProfilePaths,
  config: Pick<TenaxConfig, "mcp">,
  /** The gateway's live view of its servers; null when none runs in this process (and none answered). */
  live: McpServerState[] | null,
  now: number,
): McpComponent {
  const names = Object.keys(config.mcp.servers);
  if (names.length === 0)
    return { status: "ok", detail: "no MCP servers configured", next: null, servers: [] };
  if (live === null)
    return {
      status: "ok",
      detail: `${names.length} MCP server(s) configured (${names.join(", ")}); they run inside the gateway and tenax chat, and no gateway answered`,
      next: null,
      servers: [],
    };
  const down = live.filter((s) => s.status === "restarting" || s.status === "failed");
  const detail = live.map((s) => describe(s, now)).join("; ");
  if (down.length === 0) return { status: "ok", detail, next: null, servers: live };
  const first = down[0] as McpServerState;
  return {
    status: "degraded",
    detail,
    next: `${first.try} shows what happens when "${first.server}" starts; check mcp.servers.${first.server} in ${paths.config}. Tenax keeps trying it by itself`,
    servers: live,
  };
}

function describe(s: McpServerState, now: number): string {
  const tools = `${s.tools} tool(s)`;
  switch (s.status) {
    case "ready":
      return `${s.server}: ready with ${tools}`;
    case "starting":
      return `${s.server}: starting (${s.target})`;
    case "stopped":
      return `${s.server}: stopped`;
    case "restarting":
    case "failed": {
      const next =
        s.next_attempt_at === null
          ? ""
          : `, next attempt in ${formatDuration(Math.max(0, s.next_attempt_at - now))}`;
      const what = s.status === "failed" ? `failed to start (${s.target})` : "restarting";
      return `${s.server}: ${what}${s.last_error ? `: ${s.last_error}` : ""}${next}; its ${tools} answer "unavailable" until then (try: ${s.try})`;
    }
    default: {
      const unhandled: never = s.status;
      return unhandled;
    }
  }
}
