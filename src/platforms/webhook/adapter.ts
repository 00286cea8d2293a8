// The webhook chat platform, for automation tools: messages come in through the gateway's
// `POST /api/platforms/webhook/messages` (the route hands each body to `receive`), and every
// answer, notice and approval request goes out as a JSON POST to the configured callback URL.
// The caller's message id is the update id, so a message posted twice runs once.
import { z } from "zod";
import { errorMessage } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { originOf, retryAfterMs } from "../../http/outbound.js";
import {
  type InboundBase,
  type InboundEvent,
  type InboundSink,
  type OutboundOp,
  type OutboundResult,
  type PlatformAdapter,
  permanent,
  retryable,
  textEvent,
} from "../adapter.js";

export const WEBHOOK_PLATFORM = "webhook";

const id = z.union([z.string().min(1).max(200), z.number().int()]).transform(String);

/** The body of `POST /api/platforms/webhook/messages`: a message, or a press of a button Tenax sent. */
export const webhookInbound = z
  .strictObject({
    /** The caller's id of this message: posting it again is recognised and runs nothing more. */
    id,
    chat_id: id,
    thread_id: id.nullable().optional(),
    chat_type: z.enum(["private", "group"]).default("private"),
    user: z.strictObject({ id, name: z.string().max(200).default("") }),
    text: z.string().min(1).max(100_000).optional(),
    button: z.strictObject({ data: z.string().min(1).max(64), message_id: id }).optional(),
  })
  .refine((body) => (body.text === undefined) !== (body.button === undefined), {
    message: "send either text (a message) or button (a press of a button Tenax sent), not both",
  });
export type WebhookInbound = z.infer<typeof webhookInbound>;

export interface WebhookAdapterOptions {
  callbackUrl: string;
  /** Sent as `Authorization: Bearer TOKEN` with each callback. */
  token?: string;
  fetchImpl?: typeof fetch;
  now?: () => number;
}

export class WebhookAdapter implements PlatformAdapter {
  readonly name = WEBHOOK_PLATFORM;
  private sink: InboundSink | null = null;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;

  constructor(private readonly options: WebhookAdapterOptions) {
    this.fetchImpl = options.fetchImpl ?? fetch;
    this.now = options.now ?? Date.now;
  }

  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
  }

  async stop(): Promise<void> {
    this.sink = null;
  }

  /** One posted body, already checked against webhookInbound; resolves once it is committed. */
  async receive(body: WebhookInbound): Promise<InboundEvent> {
    if (this.sink === null) throw new Error("the webhook platform is not started");
    const base: InboundBase = {
      update_id: body.id,
      chat: { platform: this.name, chat_id: body.chat_id, thread_id: body.thread_id ?? null },
      chat_type: body.chat_type,
      user: { id: body.user.id, name: body.user.name },
      at: this.now(),
    };
    const event: InboundEvent =
      body.button !== undefined
        ? {
            ...base,
            type: "button",
            callback_id: body.id,
            data: body.button.data,
            message_id: body.button.message_id,
          }
        : textEvent({ ...base, message_id: body.id }, body.text ?? "");
    await this.sink(event);
    return event;
  }

  async perform(op: OutboundOp, signal?: AbortSignal): Promise<OutboundResult> {
    // A typing indicator or a press's answer means nothing to a callback URL.
    if (op.type === "typing" || op.type === "answer") return { ok: true, message_id: null };
    const messageId = op.type === "edit" ? op.message_id : `wh_${newId()}`;
    const body = {
      type: op.type,
      message_id: messageId,
      chat_id: op.chat.chat_id,
      thread_id: op.chat.thread_id,
      text: op.text,
      format: op.format,
      buttons: op.buttons ?? [],
      ...(op.type === "send" && op.reply_to !== undefined ? { reply_to: op.reply_to } : {}),
    };
    const origin = originOf(this.options.callbackUrl);
    let response: Response;
    try {
      response = await this.fetchImpl(this.options.callbackUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(op.idempotency_key ? { "idempotency-key": op.idempotency_key } : {}),
          ...(this.options.token ? { authorization: `Bearer ${this.options.token}` } : {}),
        },
        body: JSON.stringify(body),
        ...(signal ? { signal } : {}),
      });
    } catch (error) {
      return { ok: false, error: retryable(`webhook callback ${origin}: ${errorMessage(error)}`) };
    }
    await response.body?.cancel().catch(() => {});
    if (response.ok) return { ok: true, message_id: messageId };
    const what = `webhook callback ${origin} answered ${response.status}`;
    if (response.status === 429 || response.status >= 500 || response.status === 408)
      return {
        ok: false,
        error: retryable(what, retryAfterMs(response.headers.get("retry-after"), this.now())),
      };
    return { ok: false, error: permanent(what) };
  }
}
