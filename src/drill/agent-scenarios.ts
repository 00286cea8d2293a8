// The agent's own layers: a summarizer call that hangs (compression times it out, starts its
// cooldown, and the turn completes uncompressed), an interrupt while a tool runs (the turn ends
// interrupted with none of its processes left and no model call after it), and a provider gone
// silent (the turn is seen stalled, then ended at its deadline).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { COMPONENT_KIND, COMPRESSION_COMPONENT_KEY } from "../agent/compression-state.js";
import { pidAlive } from "../agent/process-group.js";
import { STALL_KIND } from "../agent/turn-progress.js";
import type { StorePort } from "../store/port.js";
import type { Scenario } from "./runner.js";
import { scratchSession } from "./scratch.js";
import { eventTrail, watchedTurn } from "./watched-turn.js";

/** Three long exchanges: under the compression threshold until one more large tool result arrives. */
async function addHistory(store: StorePort, session: string): Promise<void> {
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
    const cooldown = await opened.store.getRecord<{ failures: number; cooldown_until: number }>(
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
    const background =
      (await opened.store.getMessages(session)).find((m) => m.role === "tool")?.content ?? "{}";
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

/**
 * A provider that goes silent mid-reply, under small limits (stalled after 1 s, ended at 3 s): the
 * progress tracker tells the stall, records it for the health model, and ends the turn at its
 * deadline (code turn_deadline) with the provider request closed and nothing of the turn left.
 */
const stalledTurn: Scenario = {
  fault: "provider silent mid-stream: a stalled turn",
  expected_layer: "lifecycle",
  async run(context) {
    const { sim, opened, session } = await scratchSession(context, "stalled", {
      agent: { stall_after: 1, turn_deadline: 3 },
    });
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    let recorded = false;
    // The fault is the provider's silence: it is there from the turn's only model call.
    context.injected();
    const { result, events } = await watchedTurn(context, opened, session, "say something slowly", {
      watch: false,
      onEvent: (event) => {
        if (event.type === "turn_stalled") {
          context.caught(event.layer);
          // The health model reads the stall from the store once its record is written.
          setTimeout(() => {
            opened.store.getRecordText(STALL_KIND, event.turn_id).then(
              (text) => {
                recorded = text !== null;
              },
              () => {
                recorded = false;
              },
            );
          }, 300);
        }
      },
    });
    await sim.idle();
    const request = sim.requests()[0]?.ended ?? "none";
    const left = opened.agent.processes.liveCount() + opened.agent.progress.running().length;
    const stallLeft = (await opened.store.getRecordText(STALL_KIND, result.turn_id)) !== null;
    return {
      ok:
        result.status === "failed" &&
        result.failure?.code === "turn_deadline" &&
        recorded &&
        !stallLeft &&
        request === "client_closed" &&
        left === 0,
      detail: `turn ${result.status} (${result.failure?.code ?? "no failure"}); stall ${recorded ? "recorded for health" : "never recorded"}${stallLeft ? " and left behind" : ""}; provider request ${request}; ${left} left running; ${eventTrail(events)}`,
    };
  },
};

export const agentScenarios: readonly Scenario[] = [hungCompression, interruptDuringTool, stalledTurn];
