// The chat platforms config.yaml names, as this gateway runs them: one adapter each (Telegram
// through grammY, the webhook platform), each a channel of the gateway's one outbox while this
// gateway holds the platforms (platforms-holder.ts), and their live status for /health. The chat
// service on top decides what each inbound message becomes; this file only makes, starts and
// stops the parts.

import type { PlatformEvent } from "../agent/events.js";
import type { TenaxConfig } from "../config/schema.js";
import { loadCode } from "../core/load-code.js";
import type { PlatformLive } from "../health/platforms-component.js";
import type { Outbox } from "../outbox/outbox.js";
import type { InboundSink, PlatformAdapter } from "../platforms/adapter.js";
import { type ChatOutbox, chatOutbox, platformChannel } from "../platforms/outbox-channel.js";
import type { TelegramAdapter } from "../platforms/telegram/adapter.js";
import { WebhookAdapter } from "../platforms/webhook/adapter.js";

export interface GatewayPlatforms {
  adapters: PlatformAdapter[];
  telegram: TelegramAdapter | null;
  webhook: WebhookAdapter | null;
  outbox: ChatOutbox;
  live(): Record<string, PlatformLive>;
  /** Send each platform's outbox entries from this gateway, and start receiving, each into its sink. */
  start(sinkFor: (platform: string) => InboundSink): Promise<void>;
  /**
   * Stop receiving and sending (the outbox is the gateway's to stop); what is queued stays queued
   * for the next start, here or in the gateway that holds the platforms then.
   */
  stop(): Promise<void>;
}

export interface PlatformsOptions {
  config: TenaxConfig;
  /** The gateway's outbox: each adapter becomes a channel of it. */
  outbox: Outbox;
  onEvent: (event: PlatformEvent) => void;
  /** A platform's connection trouble (null: it recovered), for the gateway's log. */
  onTrouble: (platform: string, message: string | null) => void;
}

/**
 * The platforms of config.yaml. Telegram's adapter (with grammY, a megabyte of code) is loaded
 * only when Telegram is configured.
 */
export async function buildPlatforms(options: PlatformsOptions): Promise<GatewayPlatforms> {
  const { config } = options;
  const tg = config.platforms.telegram;
  const telegram =
    tg === undefined
      ? null
      : new (
          await loadCode("the Telegram platform", () => import("../platforms/telegram/adapter.js"))
        ).TelegramAdapter({
          token: tg.token,
          apiRoot: tg.api_root,
          mode: tg.mode,
          pollTimeoutS: tg.poll_timeout,
          ...(tg.webhook_url ? { webhookUrl: tg.webhook_url } : {}),
          ...(tg.webhook_secret ? { webhookSecret: tg.webhook_secret } : {}),
          onTrouble: (message) => {
            options.onTrouble("telegram", message);
            // Telegram answers again: what waits out a backoff step goes now, not minutes later.
            if (message === null) void options.outbox.wake("telegram").catch(() => undefined);
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
  return {
    adapters,
    telegram,
    webhook,
    outbox: chatOutbox(options.outbox),
    live: () => ({
      ...(telegram ? { telegram: telegram.status() } : {}),
      ...(webhook ? { webhook: webhook.status() } : {}),
    }),
    async start(sinkFor) {
      for (const adapter of adapters) {
        options.outbox.add(platformChannel(adapter, { onEvent: options.onEvent }));
        await adapter.start(sinkFor(adapter.name));
      }
    },
    async stop() {
      for (const adapter of adapters) options.outbox.remove(adapter.name);
      await Promise.all(adapters.map((a) => a.stop()));
    },
  };
}
