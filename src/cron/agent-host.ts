// The agent itself as the cron engine's host, for `tenax cron tick` and `tenax cron run` when no
// gateway runs the jobs: each run is a turn of this process's agent, stopped by its own signal.
// As in the gateway, no one can approve a command: what the exec policy holds back is denied.
import type { Agent } from "../agent/agent.js";
import { TurnInterrupt } from "../agent/turn-failure.js";
import { type CronHost, cronResult, targetOf } from "./host.js";

export function agentCronHost(agent: Agent, cwd: string): CronHost {
  const running = new Map<string, AbortController>();
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
