// How `tenax chat` answers an approval inline: the request is shown (by the status view), then a
// question on the terminal that takes the next line typed after it (lines typed ahead stay for the
// next turn): y approve once, n deny, s always in this session, a always (the pattern is added to
// tools.exec.allow); s and a only when the approval has a pattern to keep. An answer that is none
// of these asks again; a closed input or an interrupted turn leaves the approval to its turn
// (denied or cancelled there), so nothing waits on a prompt no one sees. On a terminal the answer
// is typed after its own prompt (`answer [y/n/s/a]: `), which stays on the screen with the answer.
import type { ApprovalDecision } from "../../agent/approvals/approval-records.js";
import type { ApprovalRequestedEvent } from "../../agent/tools/types.js";

/**
 * The next line the user types from now on, or null once the input closed or `signal` fired;
 * `prompt` is shown where the answer is typed, on a terminal.
 */
export type ReadAnswer = (signal: AbortSignal, prompt?: string) => Promise<string | null>;

const ANSWERS: Record<string, ApprovalDecision> = {
  y: "approve",
  yes: "approve",
  n: "deny",
  no: "deny",
  s: "session",
  a: "always",
};

/** The answers this approval takes: s and a keep its pattern, so none without one. */
function choices(event: ApprovalRequestedEvent): string[] {
  return event.pattern === "" ? ["y", "n"] : ["y", "n", "s", "a"];
}

export function approvalQuestion(event: ApprovalRequestedEvent): string {
  const keep =
    event.pattern !== ""
      ? `, [s] always in this session, [a] always (adds "${event.pattern}" to tools.exec.allow)`
      : event.dangers.length > 0
        ? " (a dangerous command is approved one run at a time)"
        : " (no pattern can say exactly this command, so it is approved one run at a time)";
  return `approve ${event.tool}: ${event.command}? [y] once, [n] deny${keep}`;
}

/** Ask until a known answer comes; null when the input closed or the turn stopped first. */
export async function askApproval(
  event: ApprovalRequestedEvent,
  read: ReadAnswer,
  say: (line: string) => void,
  signal: AbortSignal,
): Promise<ApprovalDecision | null> {
  const allowed = choices(event);
  const prompt = `answer [${allowed.join("/")}]: `;
  say(approvalQuestion(event));
  for (;;) {
    const line = await read(signal, prompt);
    if (line === null) return null;
    const answer = line.trim().toLowerCase();
    const decision = ANSWERS[answer];
    if (decision !== undefined && allowed.includes(answer.slice(0, 1))) return decision;
    say(`answer ${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}`);
  }
}

/**
 * The chat's input as a queue: lines go to a pending answer first, else wait for the main loop.
 * Wraps readline's "line" and "close" events.
 */
export class LineQueue {
  private readonly buffered: string[] = [];
  private readonly readers: Array<(line: string | null) => void> = [];
  private answer: ((line: string | null) => void) | null = null;
  private closed = false;
  private prompter: ((prompt: string | null) => void) | null = null;

  /**
   * How a question's prompt is shown where the answer is typed (a terminal's line editor), and put
   * back (null) once answered. Without one, questions show no prompt of their own.
   */
  usePrompt(prompter: (prompt: string | null) => void): void {
    this.prompter = prompter;
  }

  push(line: string): void {
    if (this.answer) {
      const answer = this.answer;
      this.answer = null;
      answer(line);
    } else {
      const reader = this.readers.shift();
      if (reader) reader(line);
      else this.buffered.push(line);
    }
  }

  close(): void {
    this.closed = true;
    this.answer?.(null);
    this.answer = null;
    for (const reader of this.readers.splice(0)) reader(null);
  }

  /** The next line for the main loop (typed ahead or to come); null once the input closed. */
  next(): Promise<string | null> {
    const line = this.buffered.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.closed) return Promise.resolve(null);
    return new Promise((resolve) => this.readers.push(resolve));
  }

  /** The next line typed from now on, for a question; null on close or when `signal` fires. */
  readonly fresh: ReadAnswer = (signal, prompt) => {
    if (this.closed || signal.aborted) return Promise.resolve(null);
    const prompter = prompt === undefined ? null : this.prompter;
    prompter?.(prompt ?? null);
    return new Promise((resolve) => {
      const done = (line: string | null) => {
        signal.removeEventListener("abort", onAbort);
        prompter?.(null);
        resolve(line);
      };
      const onAbort = () => {
        if (this.answer === done) this.answer = null;
        prompter?.(null);
        resolve(null);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.answer = done;
    });
  };
}
