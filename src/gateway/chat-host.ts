// The gateway as the chat service's host: a chat message's turn is a turn the gateway launches
// like any other, so it counts against gateway.max_turns, is told of a shutdown, drains, and is
// resumed after a crash by the same path; its held-back commands wait on the agent's ApprovalBook
// for the chat's buttons (or the runs API) to decide.
import type { Agent } from "../agent/agent.js";
import type { ChatHost } from "../platforms/chat-host.js";
import type { Gateway } from "./gateway.js";

export function gatewayChatHost(
  gateway: Pick<Gateway, "launch" | "interrupt" | "isRunning">,
  agent: Pick<Agent, "newSessionOp" | "approvals">,
): ChatHost {
  const approvals = agent.approvals;
  return {
    newSessionOp: (options) => agent.newSessionOp(options),
    async start(request) {
      // A refusal (429 too_many_turns, 503 shutting_down) is an HttpError whose code the service reads.
      const launched = await gateway.launch({
        sessionId: request.sessionId,
        text: request.text,
        watcher: { onEvent: (event) => request.onEvent(event), shutdown: () => {} },
        approvals: { requestedBy: request.requestedBy },
      });
      return { result: launched.result };
    },
    interrupt: (sessionId, reason) => gateway.interrupt(sessionId, reason, "stopped"),
    isRunning: (sessionId) => gateway.isRunning(sessionId),
    pendingApprovals: async (sessionId) =>
      (await approvals.pending()).filter((r) => r.session_id === sessionId),
    getApproval: (approvalId) => approvals.get(approvalId),
    decide: (approvalId, decision, decidedBy) => approvals.decide(approvalId, decision, decidedBy),
  };
}
