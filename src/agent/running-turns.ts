// The turns one process runs itself, by session, each with its own stop: what the agent-backed
// hosts (cron's `tenax cron tick`, the chat service's tests) share. A turn is tracked from its
// start until it settles; interrupting it aborts its signal with a TurnInterrupt.
import { type InterruptCode, TurnInterrupt } from "./turn-failure.js";

export class RunningTurns {
  private readonly running = new Map<string, AbortController>();

  /** Run `work` as the session's turn, tracked until it settles. */
  run<T>(sessionId: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.running.set(sessionId, controller);
    return work(controller.signal).finally(() => {
      if (this.running.get(sessionId) === controller) this.running.delete(sessionId);
    });
  }

  isRunning(sessionId: string): boolean {
    return this.running.has(sessionId);
  }

  /** Interrupt the session's turn; false when it runs none here. */
  interrupt(sessionId: string, reason: string, code: InterruptCode = "stopped"): boolean {
    const controller = this.running.get(sessionId);
    if (!controller) return false;
    controller.abort(new TurnInterrupt(code, reason));
    return true;
  }

  /** Interrupt every turn (a shutdown); how many there were. */
  interruptAll(reason: string, code: InterruptCode): number {
    for (const controller of this.running.values()) controller.abort(new TurnInterrupt(code, reason));
    return this.running.size;
  }
}
