// What a Ctrl-C does in `tenax chat`: it interrupts a running turn; otherwise the first says how to
// leave and a second within two seconds leaves. A press counts as the first of two only until the
// next line is taken up: the Ctrl-C that interrupted a turn, followed by another message and its
// answer, must not make one Ctrl-C at the next prompt leave at once, without a word.

export type CtrlCAction = "interrupt" | "leave" | "hint";

export class CtrlCPresses {
  private last: number | null = null;

  constructor(private readonly windowMs = 2000) {}

  /** A line is taken up (a message or a command): a press before it starts no double press. */
  lineTaken(): void {
    this.last = null;
  }

  /** One Ctrl-C at `now`; `turnRunning`: a turn runs and is not interrupted yet. */
  press(now: number, turnRunning: boolean): CtrlCAction {
    const previous = this.last;
    this.last = now;
    if (turnRunning) return "interrupt";
    return previous !== null && now - previous < this.windowMs ? "leave" : "hint";
  }
}
