// An MCP server as it is shown (in /health, `tenax mcp list`, the audit trail): its command line,
// or its URL without the query or credentials. Redact what it returns still: a command line may
// carry what a secret variable put there. Kept apart from the client so showing a server never
// loads the MCP SDK.
import type { McpServerConfig } from "../../config/mcp-schema.js";
import { commandLine } from "../../core/errors.js";

export function mcpTarget(config: McpServerConfig): string {
  return "command" in config ? commandLine([config.command, ...config.args]) : shownUrl(config.url);
}

function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url;
  }
}
