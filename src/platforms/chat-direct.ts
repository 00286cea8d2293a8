// What the chat service sends past the outbox, straight through the adapter, because it is worth
// nothing later: the typing indicator (every few seconds while a turn runs, failures ignored), the
// answer to a button press (the platform forgets the press soon), and the shutdown notices (one
// attempt, bounded, never blocking the shutdown).
import type { ChatRef, InboundButton, OutboundOp, PlatformAdapter } from "./adapter.js";

export class PlatformDirect {
  private readonly typing = new Set<() => void>();

  constructor(private readonly adapters: ReadonlyMap<string, PlatformAdapter>) {}

  /** Send the typing indicator now and every `everyMs` until the returned stop is called. */
  startTyping(chat: ChatRef, everyMs: number): () => void {
    const adapter = this.adapters.get(chat.platform);
    if (adapter === undefined) return () => undefined;
    const send = () => {
      try {
        void adapter.perform({ type: "typing", chat }, AbortSignal.timeout(everyMs)).catch(() => undefined);
      } catch {
        // Best effort: the indicator is never worth a failure.
      }
    };
    send();
    const timer = setInterval(send, everyMs);
    timer.unref();
    const stop = () => {
      clearInterval(timer);
      this.typing.delete(stop);
    };
    this.typing.add(stop);
    return stop;
  }

  stopTyping(): void {
    for (const stop of [...this.typing]) stop();
  }

  /** Answer a button press: a short notice to who pressed it. */
  async answer(event: InboundButton, text: string): Promise<void> {
    await this.once({ type: "answer", callback_id: event.callback_id, text }, event.chat.platform, 5_000);
  }

  /** One attempt at an op, bounded by `timeoutMs` even if the adapter ignores its signal; whether it went through. Never throws. */
  async once(op: OutboundOp, platform: string, timeoutMs: number): Promise<boolean> {
    const adapter = this.adapters.get(platform);
    if (adapter === undefined) return false;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      const sent = adapter.perform(op, AbortSignal.timeout(timeoutMs)).then(
        (r) => r.ok,
        () => false,
      );
      return await Promise.race([sent, late]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
