// One agent turn as a plain async function: the user's message is committed first, then the model
// is called with the history (the message's sync runs meanwhile, or, for a caller that tells of the
// turn only by its answer, comes with the end's; nothing is told of the turn before it is durable),
// tool calls are run and each result committed as it completes, until a final answer, committed
// with the turn's end, or the iteration budget. The turn holds a lease that the one
// scheduler renews; a crash leaves the turn "running" with an expired lease and a transcript to
// resume from. One abort stops everything of the turn: the model call (auxiliary ones included),
// the tools, their processes, and subagents.
//
// Its steps, each in its own module: the start (turn-start.ts: begun or resumed, its events held
// until it is durable, the progress tracker, the abort, the lease's heartbeat), the model/tool loop
// (turn-loop.ts), and the end (turn-end.ts: the failure classified, the end committed with the
// answer, the result told). What the turn has come to so far is a TurnRun (turn-run.ts); its
// contract with callers is in turn-types.ts.
import { newId } from "../core/ids.js";
import { traceTurn } from "./agent-trace.js";
import { failTurn, finishTurn } from "./turn-end.js";
import { runTurnLoop } from "./turn-loop.js";
import { TurnRun } from "./turn-run.js";
import { startTurn } from "./turn-start.js";
import type { TurnDeps, TurnInput, TurnResult } from "./turn-types.js";

export { CONTINUE_NAME, CONTINUE_PROMPT, cutByOutputLimit } from "./turn-loop.js";
export type {
  AgentEvent,
  TurnCompressor,
  TurnDeps,
  TurnInput,
  TurnLimits,
  TurnResult,
  TurnStatus,
} from "./turn-types.js";

/** Run one turn (above), as one trace: every model call, tool, compression and commit of it nests under its span. */
export function runTurn(agent: TurnDeps, input: TurnInput): Promise<TurnResult> {
  return traceTurn(input, () => runTurnNow(agent, input));
}

async function runTurnNow(agent: TurnDeps, input: TurnInput): Promise<TurnResult> {
  // A takeover another process won throws lease_lost here: nothing of the turn runs.
  const start = await startTurn(agent, input);
  const run = new TurnRun();
  try {
    await runTurnLoop(agent, input, start, run);
  } catch (e) {
    failTurn(agent, start, run, e);
  } finally {
    await start.stop();
    // The task's processes never outlive it, whether it completed, failed or was interrupted.
    await agent.cleanupTask(start.taskId).catch(() => {});
  }
  return finishTurn(agent, input, start, run);
}

/** A new id for a subagent's task, time-sortable like every other id. */
export function newTaskId(now: number): string {
  return newId("task_", now);
}
