// The resilience core's tests share this: simulators and runtimes started per test and closed
// after it, a recorder of route events, and the error steps providers really send.
import { afterEach } from "vitest";
import { configSchema } from "../../src/config/schema.js";
import { ProviderError } from "../../src/llm/classified-error.js";
import type { RouteEvent, StatusEvent } from "../../src/llm/route-events.js";
import type { RouteRequest } from "../../src/llm/router.js";
import { createModelRuntime, type ModelRuntime } from "../../src/llm/runtime.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import type { SimStep } from "../../src/llm/simulator/steps.js";
import type { AnthropicPeer } from "./anthropic-peer.js";
import { type FakeDeps, fakeDeps } from "./fake-time.js";

export const open: Array<Simulator | ModelRuntime | AnthropicPeer> = [];

afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

export async function sim(models?: Record<string, { context_window: number }>): Promise<Simulator> {
  const s = await startSimulator(models ? { models } : {});
  open.push(s);
  return s;
}

export async function runtime(config: unknown, deps: FakeDeps = fakeDeps()): Promise<ModelRuntime> {
  const rt = await createModelRuntime(configSchema.parse(config), { deps });
  open.push(rt);
  return rt;
}

export const hello: RouteRequest = { messages: [{ role: "user", content: "hello there" }] };

export function recorder() {
  const events: RouteEvent[] = [];
  return {
    events,
    onEvent: (e: RouteEvent) => events.push(e),
    status: () => events.filter((e): e is StatusEvent => "layer" in e),
    types: () => events.filter((e) => "layer" in e).map((e) => e.type),
  };
}

export function keyOf(record: { headers: Record<string, string | string[] | undefined> }): string {
  return String(record.headers.authorization ?? "").replace(/^Bearer /, "");
}

export type ErrorStep = Extract<SimStep, { type: "error" }>;

export const err = (
  status: number,
  headers: Record<string, string> = {},
  body?: ErrorStep["body"],
): ErrorStep => ({
  type: "error",
  status,
  headers,
  ...(body === undefined ? {} : { body }),
});

export async function rejected(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}
