// The chat platforms config.yaml names, as this gateway runs them: one adapter each (Telegram
// through grammY, the webhook platform), the outbox that sends through them on the gateway's
// scheduler, and their live status for /health. The chat service on top decides what each
// inbound message becomes; this file only makes and starts the parts.
import type { PlatformEvent } from "../agent/events.js";
import type { Scheduler } from "../agent/scheduler.js";
import type { TenaxConfig } from "../config/schema.js";
import type { PlatformLive } from "../health/platforms-component.js";
import type { InboundSink, PlatformAdapter } from "../platforms/adapter.js";
import { PlatformOutbox } from "../platforms/outbox.js";
import { TelegramAdapter } from "../platforms/telegram/adapter.js";
import { WebhookAdapter } from "../platforms/webhook/adapter.js";
import type { StorePort } from "../store/port.js";

export interface GatewayPlatforms {
  adapters: PlatformAdapter[];
  telegram: TelegramAdapter | null;
  webhook: WebhookAdapter | null;
  outbox: PlatformOutbox;
  live(): Record<string, PlatformLive>;
  /** Start receiving on every adapter, each into its sink, and the outbox's sender. */
  start(scheduler: Scheduler, sinkFor: (platform: string) => InboundSink): Promise<void>;
  /** Stop receiving and sending; what is queued stays queued for the next start. */
  stop(): Promise<void>;
}

export interface PlatformsOptions {
  config: TenaxConfig;
  store: StorePort;
  onEvent: (event: PlatformEvent) => void;
  /** A platform's connection trouble (null: it recovered), for the gateway's log. */
  onTrouble: (platform: string, message: string | null) => void;
}

export function buildPlatforms(options: PlatformsOptions): GatewayPlatforms {
  const { config } = options;
  const tg = config.platforms.telegram;
  const telegram =
    tg === undefined
      ? null
      : new TelegramAdapter({
          token: tg.token,
          apiRoot: tg.api_root,
          mode: tg.mode,
          pollTimeoutS: tg.poll_timeout,
          ...(tg.webhook_url ? { webhookUrl: tg.webhook_url } : {}),
          ...(tg.webhook_secret ? { webhookSecret: tg.webhook_secret } : {}),
          onTrouble: (message) => {
            options.onTrouble("telegram", message);
            // Telegram answers again: what waits out a backoff step goes now, not minutes later.
            if (message === null) void outbox.wake("telegram").catch(() => undefined);
          },
        });
  const wh = config.platforms.webhook;
  const webhook =
    wh === undefined
      ? null
      : new WebhookAdapter({ callbackUrl: wh.callback_url, ...(wh.token ? { token: wh.token } : {}) });
  const adapters: PlatformAdapter[] = [telegram, webhook].filter(
    (a): a is NonNullable<typeof a> => a !== null,
  );
  const outbox = new PlatformOutbox({ store: options.store, adapters, onEvent: options.onEvent });
  return {
    adapters,
    telegram,
    webhook,
    outbox,
    live: () => ({
      ...(telegram ? { telegram: telegram.status() } : {}),
      ...(webhook ? { webhook: webhook.status() } : {}),
    }),
    async start(scheduler, sinkFor) {
      for (const adapter of adapters) await adapter.start(sinkFor(adapter.name));
      if (adapters.length > 0) outbox.maintainOn(scheduler);
    },
    async stop() {
      outbox.stop();
      await Promise.all(adapters.map((a) => a.stop()));
    },
  };
}
