// What the MCP layer tells and shows: each server's state as /health, `tenax status`, the
// dashboard and /metrics read it, and the events the feed and the audit trail record.

/** starting: its first start; ready: answering, with its tools; restarting: lost after being ready
 * (or failing since), waiting for its next attempt; failed: it has never started, and is tried again. */
export type McpServerStatus = "starting" | "ready" | "restarting" | "failed" | "stopped";

export interface McpServerState {
  server: string;
  transport: "stdio" | "http";
  /** The command line, or the URL without its query. */
  target: string;
  status: McpServerStatus;
  /** Tools the model is shown: the server's last list, kept while it is down. */
  tools: number;
  /** Since when the server is in this status (ms since the epoch). */
  since: number;
  pid: number | null;
  /** Why it is not ready, or why it last stopped. */
  last_error: string | null;
  /** When the next attempt to start it is due; null unless restarting or failed. */
  next_attempt_at: number | null;
  /** Failed starts, and losses soon after a start, in a row: what the backoff doubles on. */
  failures: number;
  calls: number;
  errors: number;
  timeouts: number;
  restarts: number;
  /** The command that shows what happens when it starts. */
  try: string;
}

export interface McpEvent {
  type: "mcp_ready" | "mcp_restart" | "mcp_timeout";
  layer: "mcp";
  server: string;
  /** The model's name of the tool, for a timeout. */
  tool?: string;
  session_id?: string;
  turn_id?: string;
  attempt?: number;
  delay_ms?: number;
  elapsed_ms?: number;
  reason?: string;
  message: string;
}
