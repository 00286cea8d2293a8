// Every event of the one union (events.ts) as one status line: its type, the layer that caught or
// reported it, the session, a message for people and the event's own fields. The gateway's event
// feed (GET /api/events) and the audit trail (logs/events.jsonl) both take events in this shape,
// so they tell the same story. Events that say nothing about the turn's health (reply text, tool
// starts) have no layer and no line.
import type { AgentEvent, McpEvent, StoreEvent, TenaxEventType } from "./events.js";

export interface FeedInput {
  type: TenaxEventType;
  layer?: string | null;
  session_id?: string | null;
  message?: string;
  data?: Record<string, unknown>;
}

/** A turn's event as a feed line: status events of every layer, and each turn's start and end. */
export function feedOfTurnEvent(sessionId: string, event: AgentEvent): FeedInput | null {
  if (event.type === "turn_started")
    return {
      type: event.type,
      layer: "agent",
      session_id: sessionId,
      message: `turn ${event.turn_id} started`,
      data: { turn_id: event.turn_id },
    };
  if (event.type === "turn_finished")
    return {
      type: event.type,
      layer: "agent",
      session_id: sessionId,
      message: `turn ${event.turn_id} ${event.status}${event.error && event.status !== "completed" ? `: ${event.error}` : ""}`,
      data: { ...event },
    };
  if (!("layer" in event) || typeof event.layer !== "string") return null;
  const data = { ...event } as Record<string, unknown>;
  const message = typeof data.message === "string" ? data.message : summarize(data);
  return { type: event.type, layer: event.layer, session_id: sessionId, message, data };
}

/** A store's event as a feed line; null for a busy retry (it happens often and heals itself). */
export function feedOfStoreEvent(event: StoreEvent): FeedInput | null {
  if (event.type === "store.busy_retry") return null;
  const { type, ...data } = event;
  return { type, layer: "store", message: describeStoreEvent(event), data };
}

/** An MCP server's event (mcp/mcp-types.ts) as a feed line; a timeout names its session. */
export function feedOfMcpEvent(event: McpEvent): FeedInput {
  const { type, layer, message, session_id, ...data } = event;
  return { type, layer, session_id: session_id ?? null, message, data };
}

/** One line for an event that carries no message of its own. */
function summarize(data: Record<string, unknown>): string {
  const parts = [String(data.type)];
  for (const key of ["provider", "model", "reason", "attempt", "to", "from", "delay_ms"])
    if (data[key] !== undefined && typeof data[key] !== "object") parts.push(`${key} ${String(data[key])}`);
  return parts.join(", ");
}

function describeStoreEvent(event: StoreEvent): string {
  switch (event.type) {
    case "store.corrupt":
      return `the store is corrupt (${event.detail}); writes are spooled. Recover: ${event.recover}`;
    case "store.spooled":
      return `${event.ops} write(s) spooled to ${event.file}: ${event.reason}`;
    case "store.integrity":
      return `integrity check: ${event.result.status}`;
    case "search.degraded":
      return `search degraded: ${event.detail}`;
    case "search.resumed":
      return `search resumed: ${event.indexed} waiting messages indexed`;
    case "search.rebuilt":
      return `search index rebuilt: ${event.messages} messages in ${event.duration_ms} ms`;
    case "store.unavailable":
      return `the store's database ${event.path} cannot be reached (${event.detail}); writes are spooled`;
    case "store.available":
      return `the store's database ${event.path} answers again after ${event.down_ms} ms`;
    case "lease_lost":
      return event.message;
    case "turn_takeover":
      return `turn ${event.turn_id} taken over${event.owner === null ? "" : ` by ${event.owner}`} (its lease epoch moved on)`;
    case "store.disk_failed":
    case "store.busy_retry":
      return event.type;
    default: {
      // A type this build does not know (a newer writer's): its name, never the object itself.
      const unhandled: never = event;
      return String((unhandled as { type: unknown }).type);
    }
  }
}
