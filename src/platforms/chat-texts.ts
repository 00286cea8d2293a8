// What the chat service says in a chat, in one place: the refusal to strangers, a turn's answer or
// failure, the commands' answers, the approval message, and the lifecycle notices. Plain words:
// what happened, and what to send next.
import type { ApprovalRecord } from "../agent/approvals/approval-records.js";
import type { TurnResult } from "../agent/turn.js";

export function refusal(platform: string, userId: string): string {
  return `Sorry, this bot answers only its allowed users. Your ${platform} user id is ${userId}; the operator can add it to platforms.${platform}.allowed_users in config.yaml.`;
}

/** A turn's answer: its reply, or what stopped it, naming the layer. */
export function turnAnswer(result: TurnResult): string {
  if (result.status === "completed")
    return result.reply.trim() === "" ? "(the reply was empty)" : result.reply;
  const said = result.reply.trim() === "" ? "" : `${result.reply}\n\n`;
  const failure = result.failure;
  if (result.status === "interrupted" && failure?.code === "stopped")
    return `${said}Stopped: the turn was interrupted (by /stop, or from outside with tenax sessions stop). Send /retry to run the message again.`;
  if (failure?.code === "turn_deadline")
    return `${said}Tenax gave up on this message: the turn ran past its deadline (agent.turn_deadline) and was ended. Send /retry to run it again.`;
  if (failure === null) return `${said}Tenax could not answer: ${result.error ?? "the turn failed"}.`;
  return `${said}Tenax could not answer (${failure.layer} layer): ${failure.message}. Next: ${failure.next}.`;
}

/** A message that could not be run at all (the host refused it). */
export function startFailed(why: string): string {
  return `Tenax could not start a turn for this message (platforms layer): ${why}. Send /retry to try again.`;
}

export function notResumed(): string {
  return "Tenax restarted while it was answering this message, and the turn was not resumed. Send /retry to run it again.";
}

export const SHUTDOWN_RESTARTING =
  "Tenax is restarting; your running request may be cut short. Send /retry if no answer comes.";
export const SHUTDOWN_STOPPING = "Tenax is shutting down; your running request is cut short.";
export const BACK_ONLINE = "Tenax is back online and goes on with your request.";

export function newSessionAnswer(sessionId: string, running: boolean): string {
  return running
    ? `Started a new session (${sessionId}). The turn still running in the old one answers here when it ends.`
    : `Started a new session (${sessionId}).`;
}

export function stopAnswer(stopped: boolean): string {
  return stopped ? "Stopping the running turn." : "Nothing is running.";
}

export interface StatusFacts {
  running: boolean;
  runningForMs: number | null;
  waiting: number;
  sessionId: string | null;
  lastError: string | null;
}

export function statusAnswer(s: StatusFacts): string {
  const state = s.running
    ? `Running${s.runningForMs === null ? "" : ` (for ${Math.round(s.runningForMs / 1000)} s)`}.`
    : "Idle.";
  return [
    state,
    `Messages waiting: ${s.waiting}.`,
    `Session: ${s.sessionId ?? "none yet (the first message makes one)"}.`,
    `Last error: ${s.lastError ?? "none"}.`,
  ].join("\n");
}

export function retryAnswer(found: boolean): string {
  return found
    ? "Running your last message again."
    : "There is no earlier message in this session to run again.";
}

export function approvalMessage(record: Pick<ApprovalRecord, "approval_id" | "command" | "reason">): string {
  return `Tenax wants to run a command that needs your approval (${record.approval_id}):\n\n${record.command}\n\nWhy it asks: ${record.reason}.`;
}

export function approvalDecided(record: ApprovalRecord): string {
  const by = record.decided_by === null ? "" : ` by ${record.decided_by}`;
  const what =
    record.status === "approved"
      ? `Approved${by}: it runs.`
      : record.status === "denied"
        ? `Denied${by}: it does not run.`
        : `It is ${record.status}: it does not run.`;
  return `${record.command}\n\n${what} (${record.approval_id})`;
}

export function noApproval(): string {
  return "No approval is waiting in this session.";
}

export function ambiguousApproval(records: readonly ApprovalRecord[], command: string): string {
  const list = records.map((r) => `${r.approval_id}: ${r.command}`).join("\n");
  return `${records.length} approvals are waiting; name one: /${command} ID\n${list}`;
}

export function unknownApproval(id: string): string {
  return `No approval ${id} is waiting in this session; /status shows the session, /approve alone picks its only one.`;
}
