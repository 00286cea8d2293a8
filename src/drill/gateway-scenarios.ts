// The gateway's lifecycle layer: a gateway killed with SIGKILL in the middle of a streamed reply,
// then started again, must resume that turn exactly once (the turns table, the simulator's
// requests and the event feed all say so).
import { RESUME_NOTE } from "../agent/turn-resume.js";
import type { ProfilePaths } from "../profile/paths.js";
import { openReader } from "../store/registry.js";
import type { TurnView } from "../store/rows.js";
import { killHard, scenarioGateway, stopGateway } from "./gateway-child.js";
import { chat, feedEvent, sessionRunning, until } from "./gateway-client.js";
import type { Scenario } from "./runner.js";
import { scratchProfile } from "./scratch.js";

/** Every session's turns, read-only (a running gateway keeps writing meanwhile). */
export async function readTurns(paths: ProfilePaths): Promise<{ session: string; turns: TurnView[] }[]> {
  const reader = openReader(paths);
  try {
    const out: { session: string; turns: TurnView[] }[] = [];
    for (const s of await reader.listSessions())
      out.push({ session: s.id, turns: await reader.getTurns(s.id) });
    return out;
  } finally {
    reader.close();
  }
}

const killedMidTurn: Scenario = {
  fault: "gateway killed (SIGKILL) mid-turn",
  expected_layer: "lifecycle",
  async run(context) {
    const profile = await scratchProfile(context);
    const { sim, paths } = profile;
    sim.script([
      {
        type: "reply",
        text: "a reply that streams slowly, word by word",
        chunk_size: 4,
        chunk_delay_ms: 150,
      },
      { type: "reply", text: "resumed and done" },
    ]);
    const first = await scenarioGateway(context);
    chat(first, "tell me slowly", context.signal).catch(() => {
      // The gateway is killed before it answers: no reply is expected.
    });
    await until(() => sim.requests().length === 1, context.signal);
    // Let part of the reply stream, then kill the process as a crash would.
    await new Promise((resolve) => setTimeout(resolve, 400));
    context.injected();
    await killHard(first);
    const [before] = await readTurns(paths);
    const killedTurn = before?.turns[0];
    if (!before || killedTurn?.status !== "running") {
      return {
        ok: false,
        detail: `after the kill the turn was ${killedTurn?.status ?? "missing"}, not running`,
      };
    }

    const second = await scenarioGateway(context);
    const resumed = await feedEvent(second, "turn_resumed", context.signal);
    if (resumed.layer) context.caught(resumed.layer);
    await until(async () => !(await sessionRunning(second, before.session, context.signal)), context.signal);
    // Give a second resume (which must not happen) the time to show.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await stopGateway(second);
    const after = (await readTurns(paths)).find((s) => s.session === before.session)?.turns ?? [];
    const resumeRequests = sim
      .requests()
      .filter((r) => JSON.stringify(r.body).includes(RESUME_NOTE.slice(0, 60))).length;
    const turn = after[0];
    const ok =
      after.length === 1 &&
      turn?.id === killedTurn.id &&
      turn.status === "completed" &&
      turn.interrupt_count === 1 &&
      resumeRequests === 1 &&
      sim.requests().length === 2;
    return {
      ok,
      detail: `turn ${turn?.status ?? "missing"} after ${turn?.interrupt_count ?? "?"} interruption(s); ${resumeRequests} resumed model call(s) of ${sim.requests().length}; feed: ${resumed.type}(${resumed.layer ?? "no layer"})`,
    };
  },
};

export const gatewayScenarios: readonly Scenario[] = [killedMidTurn];
