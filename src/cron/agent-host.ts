// The agent itself as the cron engine's host, for `tenax cron tick` and `tenax cron run` when no
// gateway runs the jobs: each run is a turn of this process's agent, stopped by its own signal.
// As in the gateway, no one can approve a command: what the exec policy holds back is denied.
import type { Agent } from "../agent/agent.js";
import type { HostedWork, TurnHost } from "../agent/resume.js";
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { TurnInterrupt } from "../agent/turn-failure.js";
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
  const running = new Map<string, AbortController>();
  const track = (
    sessionId: string,
    work: HostedWork,
    watcher?: Follower,
  ): { result: Promise<TurnResult> } => {
    const controller = new AbortController();
    running.set(sessionId, controller);
    const result = work(controller.signal, (event) => watcher?.onEvent(event)).finally(() =>
      running.delete(sessionId),
    );
    return { result };
  };
  const interrupt = (sessionId: string, reason: string): boolean => {
    const controller = running.get(sessionId);
    if (!controller) return false;
    controller.abort(new TurnInterrupt("stopped", reason));
    return true;
  };
  const isRunning = (sessionId: string) => running.has(sessionId);
  return { cron: agentCronHost(agent, cwd, running), resume: { track, interrupt, isRunning } };
}

export function agentCronHost(
  agent: Agent,
  cwd: string,
  running = new Map<string, AbortController>(),
): CronHost {
  return {
    async start(request) {
      const controller = new AbortController();
      running.set(request.sessionId, controller);
      const route = request.model === null ? undefined : agent.runtime.router.turn(targetOf(request.model));
      const result = agent
        .turn({
          sessionId: request.sessionId,
          text: request.text,
          cwd: request.cwd ?? cwd,
          signal: controller.signal,
          approvals: null,
          ...(route ? { route } : {}),
        })
        .then(cronResult)
        .finally(() => running.delete(request.sessionId));
      return { result };
    },
    interrupt(sessionId, reason) {
      const controller = running.get(sessionId);
      if (!controller) return false;
      controller.abort(new TurnInterrupt("stopped", reason));
      return true;
    },
    isRunning: (sessionId) => running.has(sessionId),
  };
}
