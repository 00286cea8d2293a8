// The running gateway's own view of its MCP servers, read from its /health (`components.mcp.servers`)
// by the commands outside it (`tenax mcp list`): each server's state as the gateway's hub keeps it.
// The body is another process's answer, so it is checked, not trusted: an entry of another shape
// (a gateway of another version) is left out rather than shown wrong.
import { z } from "zod";
import type { McpServerState } from "../agent/mcp/mcp-types.js";
import type { OutsideView } from "./gateway-status.js";

const stateSchema = z.object({
  server: z.string(),
  transport: z.enum(["stdio", "http"]),
  target: z.string(),
  status: z.enum(["starting", "ready", "restarting", "failed", "stopped"]),
  tools: z.number(),
  since: z.number(),
  pid: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.number().nullable(),
  failures: z.number(),
  calls: z.number(),
  errors: z.number(),
  timeouts: z.number(),
  restarts: z.number(),
  try: z.string(),
}) satisfies z.ZodType<McpServerState>;

/**
 * The servers the gateway runs, as its /health gave them; null when no gateway of this profile
 * answered with a health report (not running, another program on its port, a refused key), so
 * nothing live is known.
 */
export function liveMcpServers(view: OutsideView): McpServerState[] | null {
  if (view.health === null) return null;
  const servers = view.health.components.mcp?.servers;
  if (!Array.isArray(servers)) return [];
  return servers.flatMap((raw: unknown) => {
    const parsed = stateSchema.safeParse(raw);
    return parsed.success ? [parsed.data] : [];
  });
}
