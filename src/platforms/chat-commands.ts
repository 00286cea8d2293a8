// The commands and button presses of a chat, run inline (never behind a running turn): /new,
// /stop, /status, /retry, /approve, /deny, and the Approve / Deny buttons. Each one's answer is
// queued in the outbox in the same store write as its inbox entry's done mark.
import type { ApprovalRecord } from "../agent/approvals/approval-records.js";
import { CONTINUE_PROMPT } from "../agent/turn.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import type { ChatRef, InboundButton, InboundCommand, InboundMessage } from "./adapter.js";
import type { ChatDecision, ChatHost } from "./chat-host.js";
import type { Lane } from "./chat-lanes.js";
import { type ChatSession, readChatSession } from "./chat-sessions.js";
import {
  ambiguousApproval,
  approvalDecided,
  approvalMessage,
  newSessionAnswer,
  noApproval,
  retryAnswer,
  statusAnswer,
  stopAnswer,
  unknownApproval,
} from "./chat-texts.js";
import type { DoneResult, InboxEntry, PlatformInbox } from "./inbox.js";
import { type EnqueueInput, outboxKey, readOutboxEntry } from "./outbox-records.js";

/** What the commands need of the chat service. */
export interface CommandContext {
  store: StorePort;
  host: ChatHost;
  inbox: PlatformInbox;
  now(): number;
  /** The entry's session key's lane, if it has one in this process. */
  lane(entry: InboxEntry): Lane | null;
  newSession(
    entry: InboxEntry,
    running?: ChatSession["running"],
  ): Promise<{ record: ChatSession; ops: WriteOp[] }>;
  /** Mark the entry done with these texts (or outbox entries) to its chat and these writes, at once. */
  commit(
    entry: InboxEntry,
    done: DoneResult,
    texts: readonly (string | EnqueueInput)[],
    extra: readonly WriteOp[],
  ): Promise<void>;
  /** Run an accepted entry (a message goes on its lane). */
  dispatch(entry: InboxEntry): void;
  answerButton(event: InboundButton, text: string): Promise<void>;
  /** Approvals decided here, so the turn's approval_decided does not edit their message again. */
  decided: Set<string>;
}

/** The button data of an approval's buttons: `apr:ID:y` approves, `apr:ID:n` denies. */
const BUTTON = /^apr:([A-Za-z0-9_-]+):([yn])$/;

const who = (e: InboxEntry) =>
  `${e.platform} user ${e.event.user.id}${e.event.user.name === "" ? "" : ` (${e.event.user.name})`}`;

/** Run a command or a button press; resolves once its answer is committed. */
export async function runInline(ctx: CommandContext, entry: InboxEntry): Promise<void> {
  const event = entry.event;
  if (event.type === "button") return button(ctx, entry, event);
  if (event.type !== "command") return;
  const record = await readChatSession(ctx.store, entry.session_key);
  const lane = ctx.lane(entry);
  const sessionId = record?.session_id ?? null;
  const done = (note: string): DoneResult => ({ session_id: sessionId, turn_id: null, note });
  switch (event.command) {
    case "new": {
      const made = await ctx.newSession(entry, record?.running ?? null);
      const answer = newSessionAnswer(made.record.session_id, lane?.current != null);
      await ctx.commit(entry, { ...done("/new"), session_id: made.record.session_id }, [answer], made.ops);
      return;
    }
    case "stop": {
      const current = lane?.current ?? null;
      const stopped =
        current !== null && ctx.host.interrupt(current.sessionId, `stopped by /stop from ${who(entry)}`);
      await ctx.commit(entry, done("/stop"), [stopAnswer(stopped)], []);
      return;
    }
    case "status": {
      const current = lane?.current ?? null;
      const answer = statusAnswer({
        running: current !== null,
        runningForMs: current === null ? null : ctx.now() - current.startedAt,
        waiting: lane?.queue.length ?? 0,
        sessionId,
        lastError: record?.last_error ?? null,
      });
      await ctx.commit(entry, done("/status"), [answer], []);
      return;
    }
    case "retry":
      return retry(ctx, entry, event, sessionId);
    case "approve":
    case "deny":
      return decideByCommand(ctx, entry, event, record);
    default: {
      const unhandled: never = event.command;
      throw new Error(`no handler for /${String(unhandled)}`);
    }
  }
}

/** /retry: the session's last user message queued again, as a message of its own in the inbox. */
async function retry(
  ctx: CommandContext,
  entry: InboxEntry,
  event: InboundCommand,
  sessionId: string | null,
) {
  const last =
    sessionId === null
      ? undefined
      : (await ctx.store.getMessages(sessionId))
          .filter((m) => m.role === "user" && m.content !== null && m.content !== CONTINUE_PROMPT)
          .at(-1);
  const text = last?.content ?? null;
  if (text !== null) {
    const again: InboundMessage = {
      type: "message",
      update_id: `${event.update_id}/retry`,
      chat: event.chat,
      chat_type: event.chat_type,
      user: event.user,
      at: ctx.now(),
      message_id: event.message_id,
      text,
    };
    // Accepted before the command is done: after a crash between the two, the command runs again
    // and finds it accepted (its id is the command's), so it is queued once.
    const accepted = await ctx.inbox.accept(again);
    if (accepted.created) ctx.dispatch(accepted.entry);
  }
  await ctx.commit(
    entry,
    { session_id: sessionId, turn_id: null, note: "/retry" },
    [retryAnswer(text !== null)],
    [],
  );
}

/** /approve [ID], /deny [ID]: the session's only pending approval, or the one named. */
async function decideByCommand(
  ctx: CommandContext,
  entry: InboxEntry,
  event: InboundCommand,
  record: ChatSession | null,
): Promise<void> {
  const done: DoneResult = {
    session_id: record?.session_id ?? null,
    turn_id: null,
    note: `/${event.command}`,
  };
  const sessions = new Set([record?.session_id, record?.running?.session_id].filter((s) => s !== undefined));
  const pending = (await Promise.all([...sessions].map((s) => ctx.host.pendingApprovals(s)))).flat();
  const id = event.args.split(/\s+/)[0] ?? "";
  const target =
    id === "" ? (pending.length === 1 ? pending[0] : undefined) : pending.find((r) => r.approval_id === id);
  if (target === undefined) {
    const why =
      id !== ""
        ? unknownApproval(id)
        : pending.length === 0
          ? noApproval()
          : ambiguousApproval(pending, event.command);
    await ctx.commit(entry, done, [why], []);
    return;
  }
  const decision: ChatDecision = event.command === "approve" ? "approve" : "deny";
  const outcome = await decide(ctx, target.approval_id, decision, who(entry));
  if (typeof outcome === "string") {
    await ctx.commit(entry, done, [outcome], []);
    return;
  }
  const texts: (string | EnqueueInput)[] = [approvalDecided(outcome)];
  // The approval's message loses its buttons and says what was decided.
  const asked = outboxKey(event.chat, `apr/${outcome.approval_id}`);
  if ((await readOutboxEntry(ctx.store, asked)) !== null)
    texts.push({
      message: {
        type: "edit",
        chat: event.chat,
        of_key: asked,
        text: approvalDecided(outcome),
        format: "plain",
        buttons: [],
      },
      id: `apr/${outcome.approval_id}/decided`,
      origin: `approval:${outcome.approval_id}`,
    });
  await ctx.commit(entry, done, texts, []);
}

/** A press of Approve or Deny by an allowed user. */
async function button(ctx: CommandContext, entry: InboxEntry, event: InboundButton): Promise<void> {
  const done: DoneResult = { session_id: null, turn_id: null, note: "button" };
  const match = BUTTON.exec(event.data);
  if (match === null) {
    await ctx.answerButton(event, "This button is not one of Tenax's.");
    await ctx.commit(entry, done, [], []);
    return;
  }
  const [, id = "", yes] = match;
  const outcome = await decide(ctx, id, yes === "y" ? "approve" : "deny", who(entry));
  const record = typeof outcome === "string" ? await ctx.host.getApproval(id) : outcome;
  const short =
    typeof outcome === "string" ? outcome : outcome.status === "approved" ? "Approved." : "Denied.";
  const edit: EnqueueInput[] =
    record === null
      ? []
      : [
          {
            message: {
              type: "edit",
              chat: event.chat,
              message_id: event.message_id,
              text: approvalDecided(record),
              format: "plain",
              buttons: [],
            },
            id: `apr/${id}/pressed/${event.update_id}`,
            origin: `approval:${id}`,
          },
        ];
  await Promise.all([
    ctx.answerButton(event, short),
    ctx.commit(entry, { ...done, session_id: record?.session_id ?? null }, edit, []),
  ]);
}

/** The decided record, or what to say when it could not be decided. */
async function decide(
  ctx: CommandContext,
  id: string,
  decision: ChatDecision,
  by: string,
): Promise<ApprovalRecord | string> {
  ctx.decided.add(id);
  try {
    return await ctx.host.decide(id, decision, by);
  } catch (error) {
    ctx.decided.delete(id);
    if (TenaxError.isInstance(error) && error.code === "not_found") return `There is no approval ${id}.`;
    if (TenaxError.isInstance(error) && error.code === "already_decided") {
      const status = (await ctx.host.getApproval(id))?.status ?? "decided";
      return `Approval ${id} is ${status} already; nothing changed.`;
    }
    return `Approval ${id} could not be decided: ${errorMessage(error)}`;
  }
}

/** The message an `approval_requested` becomes in its chat: the command, and Approve / Deny. */
export function approvalRequest(
  chat: ChatRef,
  asked: Pick<ApprovalRecord, "approval_id" | "command" | "reason">,
): EnqueueInput {
  const id = asked.approval_id;
  return {
    message: {
      type: "send",
      chat,
      text: approvalMessage(asked),
      format: "plain",
      buttons: [
        [
          { text: "Approve", data: `apr:${id}:y` },
          { text: "Deny", data: `apr:${id}:n` },
        ],
      ],
    },
    // A resumed turn asks again for the same record: the same id is recognised and not sent twice.
    id: `apr/${id}`,
    origin: `approval:${id}`,
  };
}

/** The edit of an approval's message once it was decided elsewhere or expired; null without one. */
export async function approvalClosed(
  store: StorePort,
  host: ChatHost,
  chat: ChatRef,
  approvalId: string,
): Promise<EnqueueInput | null> {
  const asked = outboxKey(chat, `apr/${approvalId}`);
  const record = await host.getApproval(approvalId);
  if (record === null || (await readOutboxEntry(store, asked)) === null) return null;
  return {
    message: {
      type: "edit",
      chat,
      of_key: asked,
      text: approvalDecided(record),
      format: "plain",
      buttons: [],
    },
    id: `apr/${approvalId}/closed`,
    origin: `approval:${approvalId}`,
  };
}
