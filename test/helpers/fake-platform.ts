// An in-memory chat platform for the platform-neutral core's tests (the outbox, the inbox): it
// records every outbound op it is asked to perform and answers each with the next scripted answer,
// and hands inbound events to its sink as a real adapter would. The real wire (Telegram's Bot
// API) is tested against the local Bot API server, not here.
import type {
  EditOp,
  InboundEvent,
  InboundSink,
  OutboundOp,
  OutboundResult,
  PlatformAdapter,
  PlatformFailure,
  SendOp,
  TextFormat,
} from "../../src/platforms/adapter.js";

/** An answer to one op: a result, a failure, or a function of the op (may wait). */
export type Answer =
  | OutboundResult
  | PlatformFailure
  | ((op: OutboundOp, signal?: AbortSignal) => Promise<OutboundResult>);

export class FakePlatform implements PlatformAdapter {
  /** Every op performed, in the order the platform got them. */
  readonly performed: OutboundOp[] = [];
  /** Set by a test to cut long texts as a real platform's adapter would. */
  split?: (text: string, format: TextFormat) => string[];
  private sink: InboundSink | null = null;
  private nextId = 100;

  constructor(
    readonly name = "fake",
    /** Answers taken in turn; once they run out every op succeeds. */
    readonly answers: Answer[] = [],
  ) {}

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
  }

  async stop(): Promise<void> {
    this.sink = null;
  }

  /** Deliver an update as the platform would; resolves when the sink committed it. */
  async receive(event: InboundEvent): Promise<void> {
    if (this.sink === null) throw new Error(`${this.name}: not started`);
    await this.sink(event);
  }

  async perform(op: OutboundOp, signal?: AbortSignal): Promise<OutboundResult> {
    this.performed.push(op);
    const answer = this.answers.shift();
    if (answer === undefined) return { ok: true, message_id: String(this.nextId++) };
    if (typeof answer === "function") return answer(op, signal);
    if ("ok" in answer) return answer;
    return { ok: false, error: answer };
  }

  /** The sends performed, in order (typing and answers left out). */
  sends(): SendOp[] {
    return this.performed.filter((op): op is SendOp => op.type === "send");
  }

  /** The edits performed, in order. */
  edits(): EditOp[] {
    return this.performed.filter((op): op is EditOp => op.type === "edit");
  }

  /** The texts of the sends and edits performed, in order. */
  texts(): string[] {
    return this.performed.flatMap((op) => (op.type === "send" || op.type === "edit" ? [op.text] : []));
  }
}
