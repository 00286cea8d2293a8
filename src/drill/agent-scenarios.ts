// The agent's own layers: a summarizer call that hangs (compression times it out, starts its
// cooldown, and the turn completes uncompressed) and an interrupt while a tool runs (the turn ends
// interrupted with none of its processes left and no model call after it).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { COMPONENT_KIND, COMPRESSION_COMPONENT_KEY } from "../agent/compression-state.js";
import { pidAlive } from "../agent/process-group.js";
import type { Store } from "../store/store.js";
import type { Scenario } from "./runner.js";
import { scratchSession } from "./scratch.js";
import { eventTrail, watchedTurn } from "./watched-turn.js";

/** Three long exchanges: under the compression threshold until one more large tool result arrives. */
async function addHistory(store: Store, session: string): Promise<void> {
  const exchanges = [0, 1, 2].flatMap((i) => [
    { role: "user", content: `question ${i}: ${"q".repeat(1_600)}` },
    { role: "assistant", content: `answer ${i}: ${"a".repeat(1_600)}` },
  ]);
  for (const message of exchanges) await store.appendMessage({ session_id: session, ...message });
}

function project(home: string): string {
  const dir = join(home, "project");
  mkdirSync(dir, { recursive: true });
  return dir;
}

const hungCompression: Scenario = {
  fault: "compression call hangs",
  expected_layer: "compression",
  async run(context) {
    const { sim, opened, session } = await scratchSession(context, "long history", {
      auxiliary: { compression: { provider: "sim", name: "summarizer", timeout: 1 } },
      compression: { threshold: 0.5 },
    });
    await addHistory(opened.store, session);
    writeFileSync(join(project(context.home), "big.txt"), "b".repeat(12_000));
    sim.script([
      { type: "tool_calls", calls: [{ name: "read_file", arguments: { path: "project/big.txt" } }] },
      { type: "hang", phase: "before_headers" },
      { type: "reply", text: "big.txt is all b." },
    ]);
    const { result, events } = await watchedTurn(context, opened, session, "look at project/big.txt", {
      watch: false,
      onEvent: (event) => {
        // The fault is the summarizer call that starts now; the sign is the compression layer's
        // own verdict on it.
        if (event.type === "compression_started") context.injected();
        if (event.type === "compression_failed") context.caught(event.layer);
      },
    });
    const cooldown = opened.store.getRecord<{ failures: number; cooldown_until: number }>(
      COMPONENT_KIND,
      COMPRESSION_COMPONENT_KEY,
    );
    const cooling = (cooldown?.failures ?? 0) >= 1 && (cooldown?.cooldown_until ?? 0) > Date.now();
    return {
      ok: result.status === "completed" && cooling && events.some((e) => e.type === "compression_failed"),
      detail: `turn ${result.status}; ${cooling ? `cooldown until ${new Date(cooldown?.cooldown_until ?? 0).toISOString()}` : "no cooldown recorded"}; ${eventTrail(events)}`,
    };
  },
};

const interruptDuringTool: Scenario = {
  fault: "interrupt during a tool",
  expected_layer: "agent",
  async run(context) {
    const { sim, opened, session } = await scratchSession(context, "interrupt");
    sim.script([
      {
        type: "tool_calls",
        calls: [
          { name: "terminal", arguments: { command: "sleep 30", background: true } },
          { name: "terminal", arguments: { command: "sleep 30" } },
        ],
      },
      { type: "reply", text: "never asked for" },
    ]);
    const controller = new AbortController();
    let startedTools = 0;
    const { result, events } = await watchedTurn(context, opened, session, "wait twice", {
      signal: controller.signal,
      watch: false,
      onEvent: (event) => {
        if (event.type === "tool_started" && ++startedTools === 2) {
          // The foreground sleep is running, the background one too: interrupt now.
          setTimeout(() => {
            context.injected();
            controller.abort();
          }, 200);
        }
        if (event.type === "turn_finished" && event.status === "interrupted") context.caught("agent");
      },
    });
    await sim.idle();
    const background = opened.store.getMessages(session).find((m) => m.role === "tool")?.content ?? "{}";
    const pid = (JSON.parse(background) as { pid?: number }).pid;
    const left = opened.agent.processes.liveCount();
    const backgroundAlive = typeof pid === "number" && pidAlive(pid);
    const requests = sim.requests().length;
    return {
      ok: result.status === "interrupted" && left === 0 && !backgroundAlive && requests === 1,
      detail: `turn ${result.status}; ${left} process(es) left, background sleep ${backgroundAlive ? "still alive" : "gone"}; ${requests} model call(s); ${eventTrail(events)}`,
    };
  },
};

export const agentScenarios: readonly Scenario[] = [hungCompression, interruptDuringTool];
