// Telegram through grammY's Api client (its wire, its types, its errors). Updates come by long
// polling (getUpdates) or, with mode webhook, through the gateway's webhook route. The polling
// loop is Tenax's own rather than grammY's `bot.start()`: that one confirms an update (the next
// getUpdates offset) even when its handler failed, and Tenax confirms an update only after the
// sink committed it. The loop outlives the Bot API being down for minutes: every failure waits
// (retry_after when Telegram names it, else growing steps) and is shown in status().
import { createHash, timingSafeEqual } from "node:crypto";
import { Api } from "grammy";
import type { Update } from "grammy/types";
import { stepBackoff } from "../../core/backoff.js";
import { realSleep } from "../../core/deps.js";
import {
  formattingRejected,
  type InboundSink,
  type OutboundOp,
  type OutboundResult,
  type PlatformAdapter,
  type PlatformFailure,
  permanent,
  retryable,
} from "../adapter.js";
import { classifyTelegramError } from "./errors.js";
import { toTelegramHtml } from "./format.js";
import { splitMessage, TELEGRAM_TEXT_LIMIT } from "./split.js";
import { ALLOWED_UPDATES, inboundOf, TELEGRAM_PLATFORM } from "./updates.js";

export interface TelegramAdapterOptions {
  token: string;
  apiRoot: string;
  mode: "polling" | "webhook";
  /** getUpdates' long-poll wait (s). */
  pollTimeoutS?: number;
  /** How long any one call may go unanswered (s); default the poll's wait plus 15. */
  callTimeoutS?: number;
  /** mode webhook: the public URL Telegram posts to, and its secret header. */
  webhookUrl?: string;
  webhookSecret?: string;
  now?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** The waits between failed polls (ms); default 1 s, 2 s, 5 s, 10 s, then 15 s. */
  pollBackoff?: { stepsMs: number[]; capMs: number };
  /** Told of each poll failure and recovery (the gateway's log). */
  onTrouble?: (message: string | null) => void;
}

export interface TelegramStatus {
  mode: "polling" | "webhook";
  /** The last call to Telegram answered (a poll, a send); false before the first. */
  connected: boolean;
  bot_username: string | null;
  last_ok_at: number | null;
  last_update_at: number | null;
  last_error: string | null;
  last_error_at: number | null;
  updates_total: number;
}

/**
 * grammY types its signals with the abort-controller package's AbortSignal, which Node's own is at
 * runtime but not to TypeScript (its event types differ); this is the one place they are bridged.
 */
type GrammySignal = Parameters<Api["getMe"]>[0];
const bridged = (signal: AbortSignal | undefined): GrammySignal => signal as unknown as GrammySignal;

/** The failures that mean Telegram was not reached (or not as this bot). */
const CONNECTION_FAILURES = new Set(["network", "server_error", "unauthorized"]);

// A bot waits at most 15 s to notice Telegram is back; a poll is one small request.
const DEFAULT_BACKOFF = { stepsMs: [1, 2, 5, 10].map((s) => s * 1000), capMs: 15_000 };

export class TelegramAdapter implements PlatformAdapter {
  readonly name = TELEGRAM_PLATFORM;
  readonly textLimit = TELEGRAM_TEXT_LIMIT;
  private readonly api: Api;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private sink: InboundSink | null = null;
  private stopping = new AbortController();
  private loop: Promise<void> | null = null;
  private readonly state: TelegramStatus;
  /** The poll loop's wait after a failure; a call that gets through ends it (Telegram is back). */
  private nap: AbortController | null = null;

  constructor(private readonly options: TelegramAdapterOptions) {
    // A call Telegram never answers (a hung proxy) fails after the long poll's wait and a margin,
    // not after grammY's default of 500 s: the loop then says so and tries again.
    this.api = new Api(options.token, {
      apiRoot: options.apiRoot.replace(/\/+$/, ""),
      timeoutSeconds: options.callTimeoutS ?? (options.pollTimeoutS ?? 30) + 15,
    });
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? realSleep;
    this.state = {
      mode: options.mode,
      connected: false,
      bot_username: null,
      last_ok_at: null,
      last_update_at: null,
      last_error: null,
      last_error_at: null,
      updates_total: 0,
    };
  }

  /** A reply cut into messages that fit, each its own outbox entry (so each is sent exactly once). */
  split(text: string): string[] {
    return splitMessage(text, this.textLimit);
  }

  status(): TelegramStatus {
    return { ...this.state };
  }

  /** Start receiving: the polling loop, or the webhook registered. Never waits for Telegram to be up. */
  async start(sink: InboundSink): Promise<void> {
    this.sink = sink;
    this.stopping = new AbortController();
    this.loop = (this.options.mode === "polling" ? this.poll() : this.register()).catch((error) =>
      this.failed(error),
    );
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    this.loop = null;
    this.sink = null;
  }

  /**
   * One update Telegram posted to the webhook route: checked against the secret, then committed
   * through the sink. Resolves true once committed (answer 200); false for a wrong secret (401).
   */
  async receiveWebhook(update: Update, secretHeader: string | undefined): Promise<boolean> {
    const secret = this.options.webhookSecret;
    if (secret !== undefined && (secretHeader === undefined || !sameSecret(secretHeader, secret)))
      return false;
    await this.handle([update]);
    return true;
  }

  async perform(op: OutboundOp, signal?: AbortSignal): Promise<OutboundResult> {
    try {
      const result = await this.call(op, signal);
      this.ok();
      return result;
    } catch (error) {
      const failure = classifyTelegramError(error);
      if (failure.code === "not_modified")
        return { ok: true, message_id: op.type === "edit" ? op.message_id : null };
      // Only a failure to reach Telegram is a lost connection; a 429 or a refused chat is an
      // answer from it (and a "connected again" after it would wake waits Telegram asked for).
      if (CONNECTION_FAILURES.has(failure.code)) this.trouble(failure.message);
      return { ok: false, error: toPlatformFailure(failure) };
    }
  }

  private async call(op: OutboundOp, signal?: AbortSignal): Promise<OutboundResult> {
    switch (op.type) {
      case "typing":
        await this.api.sendChatAction(
          op.chat.chat_id,
          "typing",
          threadOf(op.chat.thread_id),
          bridged(signal),
        );
        return { ok: true, message_id: null };
      case "answer":
        await this.api.answerCallbackQuery(op.callback_id, op.text ? { text: op.text } : {}, bridged(signal));
        return { ok: true, message_id: null };
      case "edit": {
        const body = rendered(op.text, op.format);
        await this.api.editMessageText(
          op.chat.chat_id,
          Number(op.message_id),
          body.text,
          { ...body.other, reply_markup: { inline_keyboard: keyboard(op.buttons) } },
          bridged(signal),
        );
        return { ok: true, message_id: op.message_id };
      }
      case "send": {
        // The outbox cuts replies to textLimit; what still comes longer is sent in parts, the
        // buttons under the last one.
        const parts = splitMessage(op.text, this.textLimit);
        let last = "";
        for (const [i, part] of parts.entries()) {
          const body = rendered(part, op.format);
          const sent = await this.api.sendMessage(
            op.chat.chat_id,
            body.text,
            {
              ...body.other,
              ...threadOf(op.chat.thread_id),
              ...(i === 0 && op.reply_to
                ? { reply_parameters: { message_id: Number(op.reply_to), allow_sending_without_reply: true } }
                : {}),
              ...(i === parts.length - 1 && op.buttons?.length
                ? { reply_markup: { inline_keyboard: keyboard(op.buttons) } }
                : {}),
            },
            bridged(signal),
          );
          last = String(sent.message_id);
        }
        return { ok: true, message_id: last };
      }
    }
  }

  /** The long-polling loop: each batch committed through the sink before the next offset confirms it. */
  private async poll(): Promise<void> {
    const signal = this.stopping.signal;
    let offset: number | undefined;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (this.state.bot_username === null) {
          const me = await this.api.getMe(bridged(signal));
          this.state.bot_username = me.username;
          // A webhook left set makes every getUpdates a 409.
          await this.api.deleteWebhook({ drop_pending_updates: false }, bridged(signal));
        }
        const updates = await this.api.getUpdates(
          {
            timeout: this.options.pollTimeoutS ?? 30,
            allowed_updates: [...ALLOWED_UPDATES],
            ...(offset === undefined ? {} : { offset }),
          },
          bridged(signal),
        );
        this.ok();
        await this.handle(updates);
        const last = updates.at(-1);
        if (last !== undefined) offset = last.update_id + 1;
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        failures++;
        const failure = classifyTelegramError(error);
        this.trouble(`polling: ${failure.message}`);
        const wait =
          failure.retryAfterMs ??
          stepBackoff(this.options.pollBackoff ?? DEFAULT_BACKOFF, failures, () => 0.5);
        await this.napFor(wait, signal);
      }
    }
  }

  /** mode webhook: tell Telegram where to post, retrying until it answers. */
  private async register(): Promise<void> {
    const signal = this.stopping.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        const me = await this.api.getMe(bridged(signal));
        this.state.bot_username = me.username;
        await this.api.setWebhook(
          this.options.webhookUrl ?? "",
          {
            allowed_updates: [...ALLOWED_UPDATES],
            ...(this.options.webhookSecret ? { secret_token: this.options.webhookSecret } : {}),
          },
          bridged(signal),
        );
        this.ok();
        return;
      } catch (error) {
        if (signal.aborted) return;
        failures++;
        const failure = classifyTelegramError(error);
        this.trouble(`setWebhook: ${failure.message}`);
        await this.sleep(
          failure.retryAfterMs ?? stepBackoff(DEFAULT_BACKOFF, failures, () => 0.5),
          signal,
        ).catch(() => {});
      }
    }
  }

  /** Hand each update to the sink in order; a rejection stops the batch (nothing after it is confirmed). */
  private async handle(updates: readonly Update[]): Promise<void> {
    const sink = this.sink;
    if (sink === null) throw new Error("the Telegram adapter is not started");
    for (const update of updates) {
      const event = inboundOf(update, this.state.bot_username ?? undefined);
      this.state.updates_total++;
      this.state.last_update_at = this.now();
      if (event !== null) await sink(event);
    }
  }

  /** Sleep `ms` after a failed poll, unless stopped or woken by a call that got through. */
  private async napFor(ms: number, signal: AbortSignal): Promise<void> {
    const nap = new AbortController();
    this.nap = nap;
    await this.sleep(ms, AbortSignal.any([signal, nap.signal])).catch(() => {});
    if (this.nap === nap) this.nap = null;
  }

  private ok(): void {
    this.nap?.abort();
    if (this.state.last_error !== null) this.options.onTrouble?.(null);
    this.state.connected = true;
    this.state.last_ok_at = this.now();
    this.state.last_error = null;
  }

  private trouble(message: string): void {
    this.state.connected = false;
    this.state.last_error = message;
    this.state.last_error_at = this.now();
    this.options.onTrouble?.(message);
  }

  private failed(error: unknown): void {
    this.trouble(`stopped: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function rendered(text: string, format: "plain" | "markdown") {
  if (format === "plain") return { text, other: {} };
  const html = toTelegramHtml(text);
  // Markup that would take a part past the limit is not worth a rejection: plain text instead.
  return html.length > TELEGRAM_TEXT_LIMIT
    ? { text, other: {} }
    : { text: html, other: { parse_mode: "HTML" as const } };
}

function threadOf(thread: string | null) {
  return thread === null ? {} : { message_thread_id: Number(thread) };
}

function keyboard(buttons: { text: string; data: string }[][] | undefined) {
  return (buttons ?? []).map((row) => row.map((b) => ({ text: b.text, callback_data: b.data })));
}

function toPlatformFailure(failure: ReturnType<typeof classifyTelegramError>): PlatformFailure {
  if (failure.plainText) return formattingRejected(failure.message);
  return failure.retryable ? retryable(failure.message, failure.retryAfterMs) : permanent(failure.message);
}

/** Compared in constant time (over digests, so the length is not told either). */
function sameSecret(given: string, expected: string): boolean {
  const digest = (v: string) => createHash("sha256").update(v).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
