// The running turns as a health component (`turns`): how many run, and each stalled one (no
// progress for agent.stall_after) named with its session, its turn, where it is stuck and the
// command that ends it. Read from the store alone (the running turns and the stall records their
// processes write, src/agent/turn-progress.ts), so the gateway's /health, `tenax status` and the
// dashboard say the same, whichever process runs the turn.
import { phaseWords, STALL_KIND, type StallRecord, type TurnPhase } from "../agent/turn-progress.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { StoreReads } from "../store/port.js";
import { formatDuration } from "./duration.js";
import type { Component } from "./status.js";

export interface StalledTurn {
  session_id: string;
  turn_id: string;
  phase: TurnPhase;
  /** How long it has made no progress, when looked at. */
  silent_ms: number;
  /** The process running it ("pid:N"). */
  owner: string;
  /** The command that ends it. */
  stop: string;
}

export interface TurnsComponent extends Component {
  running: number;
  stalled: StalledTurn[];
}

export async function turnsComponent(
  paths: ProfilePaths,
  reader: StoreReads | null,
  now: number,
): Promise<TurnsComponent> {
  let running: Awaited<ReturnType<StoreReads["runningTurns"]>> = [];
  const stalled: StalledTurn[] = [];
  try {
    running = (await reader?.runningTurns()) ?? [];
    for (const turn of running) {
      const text = (await reader?.getRecordText(STALL_KIND, turn.id)) ?? null;
      if (text === null) continue;
      const record = JSON.parse(text) as StallRecord;
      stalled.push({
        session_id: turn.session_id,
        turn_id: turn.id,
        phase: record.phase,
        silent_ms: Math.max(0, now - record.progress_at),
        owner: record.owner,
        stop: tenaxCommand(paths.name, ["sessions", "stop", turn.session_id]),
      });
    }
  } catch {
    // A store that cannot be read is the store component's news.
  }
  if (stalled.length === 0)
    return {
      status: "ok",
      detail:
        running.length === 0
          ? "no turn running"
          : `${running.length} turn${running.length === 1 ? "" : "s"} running, none stalled`,
      next: null,
      running: running.length,
      stalled,
    };
  const named = stalled.map(
    (s) =>
      `turn ${s.turn_id} of session ${s.session_id} stalled: no progress for ${formatDuration(s.silent_ms)}, ${phaseWords(s.phase)} (run by ${s.owner})`,
  );
  return {
    status: "degraded",
    detail: `${running.length} running; ${named.join("; ")}`,
    next: `wait, or end it: ${stalled.map((s) => s.stop).join("; ")}`,
    running: running.length,
    stalled,
  };
}
