// One agent turn of a drill scenario, with every status event it raises passed to the runner as
// the layer that showed the fault (the event's own `layer`), and kept for the row's detail.

import type { OpenedAgent } from "../agent/setup.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import type { ScenarioContext } from "./runner.js";

export interface WatchedTurn {
  result: TurnResult;
  events: AgentEvent[];
}

export async function watchedTurn(
  context: ScenarioContext,
  opened: OpenedAgent,
  sessionId: string,
  text: string,
  options: { signal?: AbortSignal; onEvent?: (event: AgentEvent) => void; watch?: boolean } = {},
): Promise<WatchedTurn> {
  const events: AgentEvent[] = [];
  const signal = options.signal ? AbortSignal.any([options.signal, context.signal]) : context.signal;
  const result = await opened.agent.turn({
    sessionId,
    text,
    cwd: context.home,
    signal,
    onEvent: (event) => {
      events.push(event);
      if (options.watch !== false && "layer" in event) context.caught(event.layer);
      options.onEvent?.(event);
    },
  });
  return { result, events };
}

/** The status events of a turn, as `type(layer)`, for a row's detail. */
export function eventTrail(events: readonly AgentEvent[]): string {
  const trail = events.filter((e) => "layer" in e).map((e) => `${e.type}(${(e as { layer: string }).layer})`);
  return trail.length > 0 ? trail.join(" → ") : "no status event";
}

/** The model each recorded chat request asked for, in order. */
export function requestedModels(requests: ReadonlyArray<{ body: unknown }>): string[] {
  return requests.map((r) => String((r.body as { model?: unknown } | null)?.model ?? "?"));
}
