// Webhook push mode: while a webhook is set, the oldest pending update is POSTed to its URL as JSON,
// with X-Telegram-Bot-Api-Secret-Token when a secret was set, and dropped once the endpoint answers
// 2xx. A failure (another status, no connection, too slow) is kept as last_error_date and
// last_error_message for getWebhookInfo and the same update is tried again after a backoff that
// doubles from initialMs to maxMs. Updates go one at a time, in order (Telegram may use several
// connections; one keeps a test's order exact).
import { errorMessage } from "../../../core/errors.js";
import type { TelegramSimState } from "./state.js";
import type { WebhookBackoff } from "./types.js";

export const DEFAULT_WEBHOOK_BACKOFF: WebhookBackoff = { initialMs: 50, maxMs: 1000, timeoutMs: 5000 };

export class WebhookPusher {
  private running: Promise<void> | null = null;
  private readonly stopping = new AbortController();

  constructor(
    private readonly state: TelegramSimState,
    private readonly backoff: WebhookBackoff,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  /** Start pushing if a webhook is set and no push loop runs. */
  kick(): void {
    if (this.running || !this.state.webhook || this.stopping.signal.aborted) return;
    this.running = this.loop().finally(() => {
      this.running = null;
      // A webhook set again while the loop was ending.
      if (this.state.webhook && !this.stopping.signal.aborted) this.kick();
    });
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
  }

  private async loop(): Promise<void> {
    let wait = this.backoff.initialMs;
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      const hook = this.state.webhook;
      if (!hook) return;
      const update = this.state.updates[0];
      if (!update) {
        await this.nextChange(signal);
        continue;
      }
      const failure = await this.push(hook.url, hook.secret_token, update, signal);
      if (signal.aborted) return;
      // The webhook may have been replaced or deleted while the push was out.
      if (this.state.webhook !== hook) continue;
      if (failure === null) {
        this.state.updates = this.state.updates.filter((u) => u.update_id !== update.update_id);
        wait = this.backoff.initialMs;
        this.state.changed();
        continue;
      }
      hook.last_error_date = this.state.now();
      hook.last_error_message = failure;
      this.state.changed();
      await delay(wait, signal);
      wait = Math.min(wait * 2, this.backoff.maxMs);
    }
  }

  /** null when the endpoint took it; otherwise what went wrong, as getWebhookInfo says it. */
  private async push(url: string, secret: string | undefined, update: unknown, signal: AbortSignal) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (secret !== undefined) headers["x-telegram-bot-api-secret-token"] = secret;
    try {
      const response = await this.fetchFn(url, {
        method: "POST",
        headers,
        body: JSON.stringify(update),
        signal: AbortSignal.any([signal, AbortSignal.timeout(this.backoff.timeoutMs)]),
      });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return null;
      return `Wrong response from the webhook: ${response.status} ${response.statusText}`.trimEnd();
    } catch (error) {
      if (signal.aborted) return "the simulator stopped";
      const cause = (error as { cause?: { code?: string } }).cause;
      if (cause?.code === "ECONNREFUSED") return "Connection refused";
      if ((error as Error).name === "TimeoutError") return "Read timeout expired";
      return `Connection failed: ${errorMessage(cause ?? error)}`;
    }
  }

  private nextChange(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        stop();
        signal.removeEventListener("abort", done);
        resolve();
      };
      const stop = this.state.onChange(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
