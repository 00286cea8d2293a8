// What a test does to the simulator, in one place for both ways of driving it: the in-process
// handle (server.ts) and the HTTP control API (routes/control.ts). Reads return copies.

import type { Exchanges } from "./exchanges.js";
import { parseFaults, parseOutage, TelegramSimFaultError } from "./faults.js";
import { injectMessage, pressButton } from "./inject.js";
import type { Listener } from "./listener.js";
import type { TelegramSimState } from "./state.js";
import type {
  CallbackAnswerRecord,
  CallRecord,
  ChatActionRecord,
  ChatInput,
  Injected,
  InjectMessageInput,
  PressButtonInput,
  SentMessage,
  WaitOptions,
} from "./types.js";
import { waitUntil } from "./wait.js";
import type { WebhookPusher } from "./webhook.js";

export class TelegramSimDriver {
  constructor(
    readonly state: TelegramSimState,
    private readonly exchanges: Exchanges,
    private readonly pusher: WebhookPusher,
  ) {}

  registerChat(chat: ChatInput): void {
    this.state.registerChat(chat);
  }

  injectMessage(input: InjectMessageInput): Injected {
    return injectMessage(this.state, input);
  }

  pressButton(input: PressButtonInput): Injected {
    return pressButton(this.state, input);
  }

  fault(faults: unknown): void {
    this.state.faults.add(parseFaults(faults));
  }

  /** Set by server.ts once it listens: what the "refuse" outage closes and opens again. */
  listener: Listener | null = null;

  /**
   * `answered`, from the control API: run the refusal once the answer to that request is out, as
   * the refusal cuts every connection, the control request's own included.
   */
  startOutage(outage?: unknown, answered?: (refuse: () => void) => void): void {
    const parsed = parseOutage(outage);
    if (parsed.mode === "refuse") {
      if (answered && parsed.for_ms === undefined)
        throw new TelegramSimFaultError(
          "a refuse outage started over HTTP needs for_ms: the control API is refused too while it lasts, so nothing could lift it",
        );
      const refuse = () => this.listener?.refuse(parsed.for_ms, () => void this.liftOutage());
      if (answered) answered(refuse);
      else refuse();
    } else void this.listener?.resume();
    this.state.faults.outage = parsed;
  }

  async liftOutage(): Promise<void> {
    this.state.faults.outage = null;
    await this.listener?.resume();
  }

  releaseHangs(): number {
    return this.exchanges.releaseHangs();
  }

  faultsQueued(): number {
    return this.state.faults.queued();
  }

  calls(method?: string): CallRecord[] {
    const all = this.state.records;
    return structuredClone(method === undefined ? all : all.filter((r) => r.method === method));
  }

  sentMessages(chatId: number): SentMessage[] {
    return structuredClone(this.state.chat(chatId)?.sent ?? []);
  }

  chatActions(chatId?: number): ChatActionRecord[] {
    const all = this.state.chatActions;
    return structuredClone(chatId === undefined ? all : all.filter((a) => a.chat_id === chatId));
  }

  callbackAnswers(): CallbackAnswerRecord[] {
    return structuredClone(this.state.callbackAnswers);
  }

  pendingUpdates(): number {
    return this.state.updates.length;
  }

  waitForMessages(chatId: number, count: number, options: WaitOptions = {}): Promise<SentMessage[]> {
    return waitUntil(
      this.state,
      () => ((this.state.chat(chatId)?.sent.length ?? 0) >= count ? this.sentMessages(chatId) : undefined),
      () => {
        const seen = this.state.chat(chatId)?.sent ?? [];
        const texts = seen.map((m) => JSON.stringify(m.text)).join(", ");
        return `the bot sent ${seen.length} of ${count} messages to chat ${chatId}${seen.length ? `: ${texts}` : ""}; calls seen: ${this.callSummary()}`;
      },
      options.timeoutMs,
    );
  }

  waitForPoll(options: WaitOptions = {}): Promise<void> {
    return waitUntil(
      this.state,
      () => (this.state.pollsHeld > 0 ? true : undefined),
      () => `no getUpdates long poll was held; calls seen: ${this.callSummary()}`,
      options.timeoutMs,
    ).then(() => undefined);
  }

  waitForCalls(method: string, count: number, options: WaitOptions = {}): Promise<CallRecord[]> {
    return waitUntil(
      this.state,
      () => {
        const calls = this.state.records.filter((r) => r.method === method && r.ended !== "open");
        return calls.length >= count ? structuredClone(calls) : undefined;
      },
      () => `saw fewer than ${count} finished ${method} calls; calls seen: ${this.callSummary()}`,
      options.timeoutMs,
    );
  }

  reset(): void {
    this.exchanges.releaseHangs();
    void this.listener?.resume();
    this.state.reset();
    this.pusher.kick();
  }

  /** The last calls, as "method status" pairs, for a wait's failure. */
  private callSummary(): string {
    const last = this.state.records.slice(-12);
    if (last.length === 0) return "none";
    const shown = last.map((r) => `${r.method} ${r.status ?? r.ended}`).join(", ");
    return this.state.records.length > last.length ? `... ${shown}` : shown;
  }
}
