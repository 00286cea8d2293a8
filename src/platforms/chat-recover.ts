// After a restart, what the inbox still holds, in arrival order: commands and button presses run
// again (their answers were never committed), messages go back on their lanes. The message a chat
// was running when the process stopped is told apart by its session record's running mark:
// - the gateway resumed its turn (handed over through ChatService.resumed): that result answers it;
// - its turn never started: it runs now, as if it had just arrived;
// - its turn ended but the answer was not committed: the answer is read back from the store;
// - its turn was interrupted and not resumed: the chat is told to send /retry;
// - its turn still runs, in another live process (which held the platforms before this one) or
//   resumed here by the watchdog: it is left pending, with its session's later messages, and
//   looked at again (the caller's) once that turn has ended.
// Nothing is answered twice: an answer is committed with the entry's done mark, so a done entry
// is never pending again.
import type { TurnResult } from "../agent/turn.js";
import type { StorePort } from "../store/port.js";
import type { LaneItem } from "./chat-lanes.js";
import { readChatSession } from "./chat-sessions.js";
import { notResumed } from "./chat-texts.js";
import type { DoneResult, InboxEntry } from "./inbox.js";

export interface RecoverReport {
  /** Messages queued to run (again). */
  queued: number;
  /** Messages answered by a turn the gateway resumed. */
  resumed: number;
  /** Messages answered from what their ended turn left in the store, or told to /retry. */
  answered: number;
  /** Commands and button presses run again. */
  inline: number;
  /** Messages whose turn still runs (another process's, a resume), or waiting behind one: left pending. */
  waiting: number;
}

export interface RecoverInput {
  store: StorePort;
  /** The inbox's pending entries of this process's platforms, oldest first. */
  pending: readonly InboxEntry[];
  /** Whether a running turn's lease owner still runs it (another live process, a resume here). */
  stillRuns(owner: string): boolean;
  /** Resumed turns by session id; taken out as they are matched. */
  handover: Map<string, Promise<TurnResult>>;
  inline(entry: InboxEntry): Promise<void>;
  queue(item: LaneItem): void;
  /** Commit the entry's answer (error non-null: a failure, for /status). */
  answer(entry: InboxEntry, done: DoneResult, text: string, error: string | null): Promise<void>;
}

export async function recoverInbox(input: RecoverInput): Promise<RecoverReport> {
  const { store } = input;
  const report: RecoverReport = { queued: 0, resumed: 0, answered: 0, inline: 0, waiting: 0 };
  // Sessions with a message left waiting: their later messages wait too, to keep their order.
  const held = new Set<string>();
  for (const entry of input.pending) {
    if (entry.event.type === "message" && held.has(entry.session_key)) {
      report.waiting++;
      continue;
    }
    if (entry.event.type !== "message") {
      await input.inline(entry);
      report.inline++;
      continue;
    }
    const record = await readChatSession(store, entry.session_key);
    const mark = record?.running?.inbox_key === entry.key ? record.running : null;
    if (mark === null) {
      input.queue({ entry });
      report.queued++;
      continue;
    }
    const resumed = input.handover.get(mark.session_id);
    if (resumed !== undefined) {
      input.handover.delete(mark.session_id);
      input.queue({ entry, resumed });
      report.resumed++;
      continue;
    }
    const turn = (await store.getTurns(mark.session_id))[mark.turns_before];
    if (turn === undefined) {
      input.queue({ entry });
      report.queued++;
      continue;
    }
    if (turn.status === "running" && turn.lease_owner !== null && input.stillRuns(turn.lease_owner)) {
      held.add(entry.session_key);
      report.waiting++;
      continue;
    }
    const done: DoneResult = {
      session_id: mark.session_id,
      turn_id: turn.id,
      note: "answered after a restart",
    };
    if (turn.status === "completed") {
      const reply = (await store.getMessages(mark.session_id))
        .filter((m) => m.turn_id === turn.id && m.role === "assistant" && (m.content ?? "") !== "")
        .at(-1)?.content;
      await input.answer(entry, done, reply ?? "(the reply was empty)", null);
    } else if (turn.status === "failed") {
      const why = turn.error ?? "the turn failed";
      await input.answer(entry, done, `Tenax could not answer: ${why}. Send /retry to try again.`, why);
    } else {
      await input.answer(
        entry,
        done,
        notResumed(),
        `turn ${turn.id} was ${turn.status} by a restart and not resumed`,
      );
    }
    report.answered++;
  }
  return report;
}
