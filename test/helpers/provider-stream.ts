// Consuming a provider's stream in tests, with the contract checked every time: iteration never
// throws and ends on exactly one `done` or `error` event. Plus timers that count what is running.
import { expect } from "vitest";
import type { ChatRequest, Provider, ProviderEvent, StreamOptions } from "../../src/llm/provider.js";
import { realTimers, type TimerDeps } from "../../src/llm/timeouts.js";

export async function collectStream(
  provider: Provider,
  request: ChatRequest,
  options: StreamOptions,
  onEvent?: (event: ProviderEvent) => void,
): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  const run = async () => {
    for await (const event of provider.stream(request, options)) {
      events.push(event);
      onEvent?.(event);
    }
  };
  await expect(run()).resolves.toBeUndefined();
  const finals = events.filter((e) => e.type === "done" || e.type === "error");
  expect(finals).toHaveLength(1);
  expect(events.at(-1)).toBe(finals[0]);
  return events;
}

export function errorOf(events: ProviderEvent[]) {
  const last = events.at(-1);
  if (last?.type !== "error") throw new Error(`expected an error event, got ${JSON.stringify(last)}`);
  return last.error;
}

/** Real timers that keep the set of those still pending, to prove none outlives a call. */
export function countingTimers(): { timers: TimerDeps; live: Set<unknown> } {
  const live = new Set<unknown>();
  const timers: TimerDeps = {
    set(fn, ms) {
      const handle = realTimers.set(() => {
        live.delete(handle);
        fn();
      }, ms);
      live.add(handle);
      return handle;
    },
    clear(handle) {
      live.delete(handle);
      realTimers.clear(handle);
    },
  };
  return { timers, live };
}
