// What the simulator is told and what it records: options, models, and one record per request.
import type { Clock, Sleep } from "../../core/deps.js";
import type { SimStep } from "./steps.js";

export interface SimModel {
  context_window: number;
}

/** What a simulator serves when not told otherwise. */
export const DEFAULT_SIM_MODELS: Readonly<Record<string, SimModel>> = { echo: { context_window: 128_000 } };

export interface SimulatorOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** The models it serves; a request for another model gets a 404 model_not_found. */
  models?: Record<string, SimModel>;
  clock?: Clock;
  sleep?: Sleep;
}

/** How a recorded request ended. `open` while it is still being answered. */
export type SimRequestEnd = "open" | "completed" | "client_closed" | "dropped" | "server_closed";

export interface SimRequestRecord {
  /** 1 for the first request after start or reset. */
  seq: number;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or null when there was none or it was not JSON. */
  body: unknown;
  received_at: number;
  /** The scripted step that answered it, "default" for the default reply, null when none applied. */
  step: SimStep["type"] | "default" | null;
  /** The status sent, null when no headers went out. */
  status: number | null;
  ended: SimRequestEnd;
  /** When the exchange closed (its socket or response), null while open. */
  ended_at: number | null;
  /** The client's port: two requests with the same one came over the same kept-alive connection. */
  remote_port: number | null;
}

export interface Simulator {
  /** The base URL for an OpenAI client, ending in /v1. */
  readonly url: string;
  readonly port: number;
  /** Queue steps for the next chat requests, one per request in order; throws on a bad step. */
  script(steps: SimStep[]): void;
  /** Steps still queued. */
  queued(): number;
  /** Copies of every request received since start or reset. */
  requests(): SimRequestRecord[];
  /** Forget the queue and the recorded requests. */
  reset(): void;
  /** Resolves once no request is being answered. */
  idle(): Promise<void>;
  /** Ends open requests (recorded as server_closed) and stops listening. */
  close(): Promise<void>;
}
