// The one event union: what a turn, the store and the gateway's lifecycle report, as a turn's
// listeners, the gateway's event feed (GET /api/events), the runs' SSE and the dashboard see it.
// Types only, so it costs nothing at run time. `type` values are snake_case; the store's keep the
// dotted names (`store.corrupt`, `search.degraded`, ...) that /api/events has always sent.
// A switch over any of these ends in a `never` check, so a new event is handled everywhere.
import type { StoreEvent } from "../store/store-types.js";
import type { McpEvent } from "./mcp/mcp-types.js";
import type { LifecycleEvent } from "./resume.js";
import type { AgentEvent } from "./turn.js";

export type { AgentEvent, LifecycleEvent, McpEvent, StoreEvent };

/** The gateway process's own lifecycle, for its event feed. */
export interface GatewayEvent {
  type: "gateway_started" | "shutdown";
  layer: "lifecycle";
  message: string;
}

/** What the cron scheduler tells (src/cron): runs started, ended, skipped, caught up; notices; deliveries. */
export interface CronEvent {
  type:
    | "cron_run_started"
    | "cron_run_finished"
    | "cron_run_resumed"
    | "cron_skipped"
    | "cron_missed"
    | "cron_failing"
    | "cron_recovered"
    | "cron_delivered"
    | "cron_delivery_failed"
    | "cron_delivery_given_up";
  layer: "cron";
  job: string;
  run_key: string | null;
  message: string;
}

/**
 * What the chat platforms tell (src/platforms): outbound messages delivered, failed (to be tried
 * again) or given up, and inbound updates that could not be committed.
 */
export interface PlatformEvent {
  type: "platform_delivered" | "platform_delivery_failed" | "platform_delivery_given_up";
  layer: "platforms";
  platform: string;
  /** The chat (chatKey: PLATFORM:CHAT), or null when the event is about no one chat. */
  chat: string | null;
  /** The outbox entry's key, or null. */
  key: string | null;
  message: string;
}

export type TenaxEvent =
  | AgentEvent
  | StoreEvent
  | LifecycleEvent
  | GatewayEvent
  | CronEvent
  | PlatformEvent
  | McpEvent;
export type TenaxEventType = TenaxEvent["type"];
