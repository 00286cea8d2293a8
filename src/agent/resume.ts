// After a crash: what becomes of each turn the reaper marked interrupted. One interrupted fewer
// than MAX_INTERRUPTIONS times is resumed (same turn id, from its last saved message) as the
// session's running turn of whoever hosts turns (the gateway); one interrupted that often is
// suspended with a note, so a turn that kills its process cannot make a resume loop.
import { isLeaseLost } from "../store/lease-fence.js";
import { turnRunningDetail } from "../store/one-running-turn.js";
import type { Agent } from "./agent.js";
import { MARKER_ROLE } from "./history.js";
import type { ReapedTurn } from "./reap.js";
import type { AgentEvent, TurnResult } from "./turn.js";
import { type ResumePoint, turnMessages } from "./turn-resume.js";

/** A turn interrupted this many times is suspended instead of resumed. */
export const MAX_INTERRUPTIONS = 3;

export const SUSPENDED_STATUS = "suspended";

/** A lifecycle event for the gateway's event feed and its log. */
export interface LifecycleEvent {
  type: "turn_resumed" | "turn_suspended" | "turn_stale";
  layer: "lifecycle";
  session_id: string;
  turn_id: string;
  interrupt_count: number;
  message: string;
}

/** The work of one hosted turn, given its stop signal and where its events go. */
export type HostedWork = (signal: AbortSignal, onEvent: (event: AgentEvent) => void) => Promise<TurnResult>;

/** What hosts turns (the gateway fits): the session's one running turn. */
export interface TurnHost<W> {
  track(sessionId: string, work: HostedWork, watcher?: W): { result: Promise<TurnResult> };
  isRunning(sessionId: string): boolean;
  /** Interrupt the session's running turn; false when it has none. */
  interrupt(sessionId: string, reason: string): boolean;
  /** True once the host has begun to stop: nothing new is started then. */
  readonly isStopping?: boolean;
}

export interface ResumeOptions<W> {
  agent: Agent;
  reaped: readonly ReapedTurn[];
  /** config gateway.auto_resume; when false nothing is resumed (suspension still applies). */
  autoResume: boolean;
  host: TurnHost<W>;
  /** The folder the resumed turns' tools start in. */
  cwd: string;
  /** Someone to follow a resumed turn (the runs API), if any. */
  watcherFor?: (turnId: string, sessionId: string) => Promise<W | undefined>;
  /**
   * How a resumed turn runs when its follower says so (asked after watcherFor): its own folder,
   * and `unattended` when no one follows to approve (a cron run: held-back commands are denied);
   * `deadline: false` when it keeps its own (a cron run's --timeout) instead of agent.turn_deadline.
   */
  turnOptionsFor?: (
    turnId: string,
    sessionId: string,
  ) => { cwd?: string; unattended?: boolean; deadline?: boolean } | undefined;
  onEvent?: (event: LifecycleEvent) => void;
}

export interface ResumedTurn extends ReapedTurn {
  /** Settles when the resumed turn has ended and is persisted. */
  result: Promise<TurnResult>;
}

export interface ResumeReport {
  resumed: ResumedTurn[];
  suspended: ReapedTurn[];
  skipped: Array<ReapedTurn & { reason: string }>;
}

export async function resumeInterrupted<W>(options: ResumeOptions<W>): Promise<ResumeReport> {
  const { agent, host } = options;
  const store = agent.store;
  const report: ResumeReport = { resumed: [], suspended: [], skipped: [] };
  const emit = (type: LifecycleEvent["type"], turn: ReapedTurn, message: string) => {
    try {
      options.onEvent?.({ type, layer: "lifecycle", ...turn, message });
    } catch {
      // A broken listener never stops the others from being resumed.
    }
  };
  for (const turn of options.reaped) {
    const skip = (reason: string) => report.skipped.push({ ...turn, reason });
    const turns = await store.getTurns(turn.session_id);
    const at = turns.findIndex((t) => t.id === turn.turn_id);
    const row = turns[at];
    if (row?.status !== "interrupted") {
      skip(`it is ${row ? row.status : "gone"} now, not interrupted`);
      continue;
    }
    if (at < turns.length - 1) {
      // Someone went on in the session meanwhile (in `tenax chat`): resuming would answer out of turn.
      skip("its session went on with a later turn; it stays interrupted");
      continue;
    }
    if (turn.interrupt_count >= MAX_INTERRUPTIONS) {
      await suspend(agent, turn);
      report.suspended.push(turn);
      emit(
        "turn_suspended",
        turn,
        `turn ${turn.turn_id} of session ${turn.session_id} was interrupted ${turn.interrupt_count} times (its process stopped each time) and is suspended, not resumed again; send a new message in that session to go on`,
      );
      continue;
    }
    if (!options.autoResume) {
      skip("gateway.auto_resume is off");
      continue;
    }
    const said = (await turnMessages(store, turn.session_id, turn.turn_id)).filter(
      (m) => m.role !== MARKER_ROLE,
    );
    const last = said.at(-1);
    if (last === undefined) {
      skip("nothing of it was saved before the stop (not even the question)");
      continue;
    }
    if (last.role === "assistant" && (last.tool_calls ?? []).length === 0) {
      // The process stopped between saving the reply and closing the turn: nothing is left to do.
      await store.updateTurn({ id: turn.turn_id, status: "completed", error: null });
      skip("its reply was saved before the stop; marked completed");
      continue;
    }
    if (host.isStopping === true) {
      skip("the gateway is stopping; it stays interrupted (a new message in its session goes on)");
      continue;
    }
    if (host.isRunning(turn.session_id)) {
      skip("its session is running another turn");
      continue;
    }
    // Taken over here first, so a takeover another process won is reported as such, not as resumed.
    const point = await takeOver(agent, turn);
    if (typeof point === "string") {
      skip(point);
      continue;
    }
    const watcher = await options.watcherFor?.(turn.turn_id, turn.session_id);
    const own = options.turnOptionsFor?.(turn.turn_id, turn.session_id);
    const launched = host.track(
      turn.session_id,
      (signal, onEvent) =>
        agent.turn({
          sessionId: turn.session_id,
          text: "",
          resume: { turnId: turn.turn_id, point },
          cwd: own?.cwd ?? options.cwd,
          signal,
          onEvent,
          ...(own?.deadline === false ? { deadline: false } : {}),
          // A run follows it: what it waits on (an approval left pending) can still be answered there.
          approvals:
            watcher === undefined || own?.unattended === true
              ? null
              : { requestedBy: `runs API, the run of resumed turn ${turn.turn_id}` },
        }),
      ...(watcher === undefined ? [] : [watcher]),
    );
    report.resumed.push({ ...turn, result: launched.result });
    emit(
      "turn_resumed",
      turn,
      `turn ${turn.turn_id} of session ${turn.session_id} was interrupted (its process stopped; interruption ${turn.interrupt_count}, suspended at ${MAX_INTERRUPTIONS}) and is resumed from its last saved message`,
    );
  }
  return report;
}

/** The turn taken over by this process, or why it was not (another took it first, its session is busy). */
async function takeOver(agent: Agent, turn: ReapedTurn): Promise<ResumePoint | string> {
  try {
    return await agent.takeOver(turn.session_id, turn.turn_id);
  } catch (error) {
    if (isLeaseLost(error)) return "another process took it over first; it runs there";
    if (turnRunningDetail(error) !== null)
      return "its session started another turn meanwhile; it stays interrupted";
    return `it could not be taken over (${error instanceof Error ? error.message : String(error)}); it stays interrupted`;
  }
}

/** Mark a turn suspended, with a note in its transcript that says what the user can do. */
async function suspend(agent: Agent, turn: ReapedTurn): Promise<void> {
  const store = agent.store;
  await store.write([
    store.messageOp({
      session_id: turn.session_id,
      role: MARKER_ROLE,
      content: `turn suspended: interrupted ${turn.interrupt_count} times (the process running it stopped each time), so Tenax does not resume it automatically; send a new message in this session to go on`,
      turn_id: turn.turn_id,
    }),
    {
      op: "turn.update",
      id: turn.turn_id,
      status: SUSPENDED_STATUS,
      error: `suspended after ${turn.interrupt_count} interruptions`,
    },
  ]);
}
