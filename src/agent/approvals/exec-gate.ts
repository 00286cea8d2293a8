// Between the terminal tool and the shell: the exec policy's judgement of a command, and for a
// command it holds back, the approval. Allowed commands run; denied ones, and held-back ones in a
// turn no one can answer for (a plain chat completion, a cron job), are a tool error the model
// reads, saying what was refused and how an operator allows it. Every held-back command gets its
// durable record, also one denied at once, so `tenax approvals list` shows what was refused.

import type { Judgement } from "../exec-policy/index.js";
import type { ToolContext } from "../tools/types.js";
import { ToolError } from "../tools/types.js";
import type { ApprovalBook } from "./approval-book.js";
import type { ApprovalRecord } from "./approval-records.js";

export interface ExecGateOptions {
  /** The policy's judgement of a command, given the patterns approved beyond config. */
  judge: (command: string, approved: readonly string[], cwd: string) => Judgement;
  book: ApprovalBook;
  /** tools.exec.mode, for the messages. */
  mode: string;
}

export class ExecGate {
  constructor(private readonly options: ExecGateOptions) {}

  /** Resolves when the command may run; throws the ToolError the model reads otherwise. */
  async admit(tool: string, command: string, context: ToolContext): Promise<void> {
    const { book } = this.options;
    const judgement = this.options.judge(
      command,
      await book.approvedPatterns(context.sessionId),
      context.cwd,
    );
    if (judgement.decision === "run") return;
    const why = judgement.reason.replace(/\.$/, "");
    const refused = (why: string, extra: Record<string, unknown> = {}) =>
      new ToolError(`${tool}: not run: ${why}`, {
        refused_by: "tools.exec",
        mode: this.options.mode,
        command,
        ...extra,
      });
    if (judgement.decision === "deny") throw refused(why);
    const request = {
      sessionId: context.sessionId,
      turnId: context.turnId,
      toolCallId: context.callId,
      tool,
      command,
      reason: why,
      dangers: judgement.dangers,
      pattern: judgement.pattern,
      requestedBy: context.approvals?.requestedBy ?? "a turn with no approval channel",
    };
    if (context.approvals === null) {
      const deniedBy = "no approval channel (denied at once)";
      const record = await book.open({ ...request, deniedBy });
      // One a turn left pending before a restart: no one can answer it now either.
      const closed =
        record.status === "pending" ? await book.decide(record.approval_id, "deny", deniedBy) : record;
      throw refused(
        `${why}; it needs an approval and no one can give one in this turn (a plain chat completion or a cron job has no approval channel), so it was denied at once (approval ${closed.approval_id}). An operator allows it ${judgement.pattern === "" ? "" : `by adding a pattern such as "${judgement.pattern}" to tools.exec.allow in config.yaml, or `}by sending the task through the runs API (POST /v1/runs) or tenax chat, where it can be approved`,
        { approval_id: closed.approval_id },
      );
    }
    const record = await book.open(request);
    if (record.status === "pending") {
      context.emit({
        type: "approval_requested",
        layer: "approvals",
        approval_id: record.approval_id,
        session_id: record.session_id,
        turn_id: record.turn_id,
        tool_call_id: record.tool_call_id,
        tool,
        command,
        reason: record.reason,
        dangers: record.dangers,
        pattern: record.pattern,
        expires_at: record.expires_at,
        message: `${tool} waits for an approval (${record.approval_id}): ${command} (${record.reason})`,
      });
    }
    const decided = await book.wait(record, context.signal);
    if (decided.status === "pending") throw new Error(`approval ${decided.approval_id} is still pending`);
    context.emit({
      type: "approval_decided",
      layer: "approvals",
      approval_id: decided.approval_id,
      status: decided.status,
      decision: decided.decision,
      decided_by: decided.decided_by,
      message: `approval ${decided.approval_id} ${describeOutcome(decided)}`,
    });
    if (decided.status === "approved") return;
    throw refused(`${why}; approval ${decided.approval_id} ${describeOutcome(decided)}`, {
      approval_id: decided.approval_id,
    });
  }
}

function describeOutcome(record: ApprovalRecord): string {
  const by = record.decided_by === null ? "" : ` by ${record.decided_by}`;
  switch (record.status) {
    case "approved":
      return record.decision === "session"
        ? `approved for the rest of this session${by}`
        : record.decision === "always"
          ? `approved always (pattern "${record.pattern}" added to tools.exec.allow)${by}`
          : `approved once${by}`;
    case "denied":
      return `denied${by}`;
    case "expired":
      return "expired: no one answered within tools.exec.approval_timeout, so it counts as denied";
    case "cancelled":
      return "cancelled: the turn was stopped";
    case "pending":
      return "is pending";
    default: {
      const unhandled: never = record.status;
      return unhandled;
    }
  }
}
