// An MCP server as `tenax mcp list` and `tenax mcp test` show it: what it runs or where it is,
// never a header's or an env variable's value (they hold tokens), with whatever a secret variable
// put in a command line redacted.
import { mcpTarget } from "../../agent/mcp/mcp-target.js";
import type { McpServerState } from "../../agent/mcp/mcp-types.js";
import type { McpServerConfig } from "../../config/mcp-schema.js";

export interface ShownServer {
  name: string;
  transport: "stdio" | "http";
  /** The command line (redacted), or the URL without its query or credentials. */
  target: string;
  timeout: number;
  approve: "all" | string[];
}

export function describeServer(
  name: string,
  server: McpServerConfig,
  redact: (text: string) => string,
): ShownServer {
  const stdio = "command" in server;
  return {
    name,
    transport: stdio ? "stdio" : "http",
    target: redact(mcpTarget(server)),
    timeout: server.timeout,
    approve: server.approve,
  };
}

/** The gateway's state with anything secret it might hold redacted (a command line, an error page). */
export function shownState(state: McpServerState, redact: (text: string) => string): McpServerState {
  return {
    ...state,
    target: redact(state.target),
    last_error: state.last_error === null ? null : redact(state.last_error),
  };
}
