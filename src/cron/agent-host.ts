// The agent itself as the cron engine's host, for `tenax cron tick` and `tenax cron run` when no
// gateway runs the jobs: each run is a turn of this process's agent, stopped by its own signal.
// As in the gateway, no one can approve a command: what the exec policy holds back is denied.
import type { Agent } from "../agent/agent.js";
import type { HostedWork, TurnHost } from "../agent/resume.js";
import { RunningTurns } from "../agent/running-turns.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { type CronHost, cronResult, targetOf } from "./host.js";

/** A turn follower (the cron runner's watcher). */
interface Follower {
  onEvent(event: AgentEvent): void;
}

/** This process as the host of turns it resumes, and of the job runs it starts. */
export interface AgentHosts {
  cron: CronHost;
  resume: TurnHost<Follower>;
}

export function agentHosts(agent: Agent, cwd: string): AgentHosts {
  const running = new RunningTurns();
  const track = (
    sessionId: string,
    work: HostedWork,
    watcher?: Follower,
  ): { result: Promise<TurnResult> } => ({
    result: running.run(sessionId, (signal) => work(signal, (event) => watcher?.onEvent(event))),
  });
  return {
    cron: agentCronHost(agent, cwd, running),
    resume: {
      track,
      interrupt: (sessionId, reason) => running.interrupt(sessionId, reason),
      isRunning: (sessionId) => running.isRunning(sessionId),
    },
  };
}

export function agentCronHost(agent: Agent, cwd: string, running = new RunningTurns()): CronHost {
  return {
    async start(request) {
      const route = request.model === null ? undefined : agent.runtime.router.turn(targetOf(request.model));
      const result = running
        .run(request.sessionId, (signal) =>
          agent.turn({
            sessionId: request.sessionId,
            text: request.text,
            cwd: request.cwd ?? cwd,
            signal,
            approvals: null,
            // A job keeps its own --timeout: agent.turn_deadline is not its deadline.
            deadline: false,
            ...(route ? { route } : {}),
          }),
        )
        .then(cronResult);
      return { result };
    },
    interrupt: (sessionId, reason) => running.interrupt(sessionId, reason),
    isRunning: (sessionId) => running.isRunning(sessionId),
  };
}
