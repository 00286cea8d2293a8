// The agent itself as the chat service's host, for tests and for a process with no gateway: each
// chat turn is a turn of this process's agent, stopped by its own signal, its held-back commands
// waiting on the agent's ApprovalBook (or the one given) for the chat to decide.
import type { Agent } from "../agent/agent.js";
import type { ApprovalBook } from "../agent/approvals/approval-book.js";
import { RunningTurns } from "../agent/running-turns.js";
import type { ChatHost } from "./chat-host.js";

/** The agent as a chat host, and a stop for its turns as a shutdown stops them (left for a resume). */
export interface AgentChatHost extends ChatHost {
  /** Interrupt every running turn as the gateway's shutdown does (`shutting_down`); how many. */
  interruptAll(reason: string): number;
}

export function agentChatHost(
  agent: Agent,
  cwd: string,
  approvals: ApprovalBook = agent.approvals,
): AgentChatHost {
  const running = new RunningTurns();
  return {
    interruptAll: (reason) => running.interruptAll(reason, "shutting_down"),
    newSessionOp: (options) => agent.newSessionOp(options),
    async start(request) {
      if (running.isRunning(request.sessionId)) {
        throw Object.assign(new Error(`session ${request.sessionId} is running a turn`), {
          code: "session_queue_full",
        });
      }
      const result = running.run(request.sessionId, (signal) =>
        agent.turn({
          sessionId: request.sessionId,
          text: request.text,
          cwd,
          signal,
          onEvent: (event) => request.onEvent(event),
          approvals: { requestedBy: request.requestedBy },
        }),
      );
      return { result };
    },
    interrupt: (sessionId, reason) => running.interrupt(sessionId, reason),
    isRunning: (sessionId) => running.isRunning(sessionId),
    pendingApprovals: async (sessionId) =>
      (await approvals.pending()).filter((r) => r.session_id === sessionId),
    getApproval: (approvalId) => approvals.get(approvalId),
    decide: (approvalId, decision, decidedBy) => approvals.decide(approvalId, decision, decidedBy),
  };
}
