// One chat message's turn, from its session to its answer: the session record is marked as
// running this message (with the turns before it, for a restart to read), the host starts the turn
// (tried again while it is full), the typing indicator runs until it ends, and the answer is
// committed with the inbox entry's done mark. A turn cut by the shutdown is not answered: its
// entry stays pending for the resume after the restart.
import type { AgentEvent, TurnResult } from "../agent/turn.js";
import { errorMessage } from "../core/errors.js";
import type { StorePort } from "../store/port.js";
import type { ChatRef } from "./adapter.js";
import type { PlatformDirect } from "./chat-direct.js";
import { BUSY_CODES, type ChatHost, errorCode, STOPPING_CODES } from "./chat-host.js";
import type { Lane, LaneItem } from "./chat-lanes.js";
import { chatSessionOp, readChatSession } from "./chat-sessions.js";
import { startFailed, turnAnswer } from "./chat-texts.js";
import type { ChatWriter } from "./chat-writer.js";
import type { InboxEntry } from "./inbox.js";

export interface LaneRunDeps {
  store: StorePort;
  host: ChatHost;
  writer: ChatWriter;
  direct: PlatformDirect;
  now(): number;
  /** Wait before a start is tried again; false when the service stops meanwhile. */
  wait(ms: number): Promise<boolean>;
  retryMs: number;
  typingEveryMs: number;
  isDone(entry: InboxEntry): Promise<boolean>;
  onTurnEvent(chat: ChatRef, event: AgentEvent): void;
  fail(platform: string, error: unknown): void;
}

/** Run one lane item. Never throws: a failure is told, and the entry kept when nothing answered it. */
export async function runLaneItem(d: LaneRunDeps, lane: Lane, item: LaneItem): Promise<void> {
  const { entry } = item;
  if (entry.event.type !== "message" || (item.resumed === undefined && (await d.isDone(entry)))) return;
  try {
    if (item.resumed !== undefined) {
      const record = await readChatSession(d.store, entry.session_key);
      const sessionId = record?.running?.session_id ?? record?.session_id ?? "";
      lane.current = { entry, sessionId, startedAt: d.now() };
      await settle(d, lane, entry, sessionId, item.resumed);
      return;
    }
    const start = await startTurn(d, lane, entry, entry.event.text);
    if (start === null) return;
    await settle(d, lane, entry, start.sessionId, start.result);
  } catch (error) {
    d.fail(entry.platform, error);
  } finally {
    lane.current = null;
  }
}

/**
 * Mark the turn as running in the chat's session record (made on first use), then start it,
 * trying again while the host is full. Null when it was not started: answered already (the host
 * refused it), or left pending for the next start (the host is stopping).
 */
async function startTurn(
  d: LaneRunDeps,
  lane: Lane,
  entry: InboxEntry,
  text: string,
): Promise<{ sessionId: string; result: Promise<TurnResult> } | null> {
  for (let fresh = false; ; ) {
    const now = d.now();
    const known = fresh ? null : await readChatSession(d.store, entry.session_key);
    const made = known === null ? await d.writer.newSession(entry) : { record: known, ops: [] };
    const sessionId = made.record.session_id;
    const turnsBefore = (await d.store.getTurns(sessionId)).length;
    const running = { inbox_key: entry.key, session_id: sessionId, turns_before: turnsBefore, at: now };
    const marked = chatSessionOp({ ...made.record, running }, now);
    await d.store.write([...made.ops, marked.op]);
    lane.current = { entry, sessionId, startedAt: now };
    try {
      const started = await d.host.start({
        sessionId,
        text,
        onEvent: (event) => d.onTurnEvent(lane.chat, event),
        requestedBy: `${entry.platform} chat ${entry.event.chat.chat_id}`,
      });
      return { sessionId, result: started.result };
    } catch (error) {
      const code = errorCode(error);
      if (code !== null && STOPPING_CODES.includes(code)) return null;
      if (code !== null && BUSY_CODES.includes(code)) {
        if (!(await d.wait(d.retryMs))) return null;
        continue;
      }
      if (code === "session_not_found" && !fresh) {
        // The session was deleted (the API, the dashboard): the chat goes on in a new one.
        fresh = true;
        continue;
      }
      const why = errorMessage(error);
      const done = { session_id: sessionId, turn_id: null, note: "not started" };
      await d.writer.commit(entry, done, [startFailed(why)], [], why);
      return null;
    }
  }
}

/** Wait for the turn and commit its answer; a turn cut by the shutdown stays pending for the resume. */
async function settle(
  d: LaneRunDeps,
  lane: Lane,
  entry: InboxEntry,
  sessionId: string,
  result: Promise<TurnResult>,
): Promise<void> {
  const stopTyping = d.direct.startTyping(lane.chat, d.typingEveryMs);
  let ended: TurnResult;
  try {
    ended = await result;
  } catch (error) {
    const why = errorMessage(error);
    const text = `Tenax could not answer (agent layer): the turn threw: ${why}. Send /retry to try again.`;
    await d.writer.commit(
      entry,
      { session_id: sessionId, turn_id: null, note: "turn threw" },
      [text],
      [],
      why,
    );
    return;
  } finally {
    stopTyping();
  }
  if (ended.status === "interrupted" && ended.failure?.code === "shutting_down") return;
  const completed = ended.status === "completed";
  const error = completed ? null : (ended.failure?.message ?? ended.error ?? ended.status);
  await d.writer.commit(
    entry,
    { session_id: ended.session_id, turn_id: ended.turn_id },
    [turnAnswer(ended)],
    [],
    error,
    completed ? "markdown" : "plain",
  );
}
