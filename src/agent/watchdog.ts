// While the gateway runs: running turns whose lease ran out. One of this process that still runs
// here is hung (its heartbeat stopped): it is interrupted. One whose owner is known to have ended
// (agent.owners: a process of this host, or an instance of a shared store), or a row of ours
// nothing runs, is reaped and resumed like at start. One of another live owner is only reported:
// it may still finish it. When an owner is found gone, the commands it
// left running are ended too (what a crashed `tenax chat` left, without waiting for the next start).
import type { Agent } from "./agent.js";
import type { ProcessReapReport } from "./process-reaper.js";
import {
  type LifecycleEvent,
  type ResumeOptions,
  type ResumeReport,
  resumeInterrupted,
  type TurnHost,
} from "./resume.js";
import type { Job } from "./scheduler.js";

export interface WatchdogOptions<W> {
  agent: Agent;
  host: TurnHost<W>;
  autoResume: boolean;
  cwd: string;
  watcherFor?: (turnId: string, sessionId: string) => Promise<W | undefined>;
  turnOptionsFor?: ResumeOptions<W>["turnOptionsFor"];
  onEvent?: (event: LifecycleEvent) => void;
  /** Told what each sweep reaped and resumed. */
  onResume?: (report: ResumeReport) => void;
  /** Told which processes a dead owner left running were ended. */
  onProcesses?: (report: ProcessReapReport) => void;
  /** How often to look (ms); every half lease by default. */
  everyMs?: number;
}

/** Look every half lease; returns the scheduler job (cancelled with the agent's scheduler). */
export function startWatchdog<W>(options: WatchdogOptions<W>): Job {
  const leaseMs = options.agent.options.config.agent.lease_seconds * 1000;
  const reported = new Set<string>();
  const every = options.everyMs ?? Math.max(1000, Math.floor(leaseMs / 2));
  return options.agent.scheduler.every("turn watchdog", every, () => sweep(options, reported));
}

/** One look at the running turns; `seen` holds the turns already reported stale (once each). */
export async function sweep<W>(options: WatchdogOptions<W>, seen = new Set<string>()): Promise<void> {
  const { agent, host } = options;
  // While the gateway drains, its turns end on their own and nothing new may start.
  if (host.isStopping === true) return;
  const now = agent.leaseNow();
  const orphans = new Set<string>();
  let deadOwner = false;
  for (const turn of await agent.store.runningTurns()) {
    const expired = turn.lease_expires_at !== null && turn.lease_expires_at <= now;
    const owner = turn.lease_owner === null ? "unknown" : agent.owners.state(turn.lease_owner);
    const stale = (message: string) => {
      if (seen.has(turn.id)) return;
      seen.add(turn.id);
      options.onEvent?.({
        type: "turn_stale",
        layer: "lifecycle",
        session_id: turn.session_id,
        turn_id: turn.id,
        interrupt_count: turn.interrupt_count,
        message,
      });
    };
    if (owner === "mine") {
      // Given up here with its end unwritten (a store outage): nothing runs it, its session waits.
      if (agent.abandoned(turn.id)) {
        orphans.add(turn.id);
        continue;
      }
      if (!expired) continue;
      if (host.interrupt(turn.session_id, "the turn's lease expired: its worker is hung")) {
        stale(
          `turn ${turn.id} of session ${turn.session_id} stopped renewing its lease (a hung worker) and is interrupted`,
        );
      } else {
        orphans.add(turn.id); // marked running, but nothing here runs it
      }
      continue;
    }
    // A holder that cannot be told from here (no owner, or a form this process cannot look up)
    // is judged by its lease alone.
    if (owner === "gone" || (owner === "unknown" && expired)) {
      orphans.add(turn.id);
      deadOwner ||= owner === "gone";
    } else if (expired) {
      stale(
        `turn ${turn.id} of session ${turn.session_id} has an expired lease but its process (${turn.lease_owner}) still runs; it is left to that process`,
      );
    }
  }
  if (orphans.size === 0) return;
  if (deadOwner) options.onProcesses?.(await agent.reapProcesses());
  const reaped = await agent.reap({ only: orphans });
  const report = await resumeInterrupted({ ...options, reaped });
  options.onResume?.(report);
}
