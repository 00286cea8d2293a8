// The chat platforms over HTTP:
//   POST /api/platforms/webhook/messages   a message (or a button press) from an automation tool,
//                                          with the gateway key; 202 once it is committed
//   POST /api/platforms/telegram/webhook   Telegram's own posts in `mode: webhook`: no gateway key
//                                          (Telegram cannot send one), the webhook secret instead
//   GET  /api/platforms                    each platform's connection and outbox, as /health has it
// A message is acknowledged only once it is committed: a store that cannot take it answers 503,
// and the sender (the tool, or Telegram) sends it again. With several gateways of one profile,
// only the one holding the chat platforms takes their messages (platforms-holder.ts): the others
// answer 503 platforms_not_held naming the holder, taking nothing, so a message is never run by
// a gateway that does not run the chats; the sender sends it again (to the holder, or here once
// this gateway holds them, within seconds of the holder's stop).
import { z } from "zod";
import { errorMessage } from "../../core/errors.js";
import type { PlatformsHolding } from "../../health/platforms-component.js";
import { type App, jsonBodyOf } from "../../http/app.js";
import { HttpError } from "../../http/http-error.js";
import { parseWith } from "../../http/validate.js";
import type { TelegramAdapter } from "../../platforms/telegram/adapter.js";
import { type WebhookAdapter, webhookInbound } from "../../platforms/webhook/adapter.js";

export interface PlatformRoutesOptions {
  webhook: WebhookAdapter | null;
  telegram: TelegramAdapter | null;
  /** The platforms component (/health's). */
  status: () => unknown;
  /** Whether this gateway holds the chat platforms; null or left out: it does (one gateway). */
  holding?: () => PlatformsHolding | null;
}

const notConfigured = (platform: string, what: string) =>
  new HttpError(
    404,
    "not_found_error",
    "platform_not_configured",
    `${what} needs platforms.${platform} in config.yaml, which this gateway does not have (docs/PLATFORMS.md)`,
  );

const notCommitted = (error: unknown) =>
  new HttpError(
    503,
    "server_error",
    "not_committed",
    `the message could not be committed, so it was not taken (${errorMessage(error)}); send it again`,
    { "retry-after": "5" },
  );

/** 503 on a gateway that does not hold the platforms: nothing is taken, the sender sends it again. */
function requireHolder(options: PlatformRoutesOptions): void {
  const holding = options.holding?.() ?? null;
  if (holding === null || holding.holder) return;
  const who = holding.held_by === null ? "no gateway is known to" : `gateway ${holding.held_by} does`;
  throw new HttpError(
    503,
    "server_error",
    "platforms_not_held",
    `gateway: this gateway (${holding.self}) does not run the chat platforms, ${who} (the store's platforms lock${holding.detail ? `: ${holding.detail}` : ""}); nothing was taken: send it to that gateway, or here again, which takes them within seconds if that one stops`,
    { "retry-after": "2" },
  );
}

// Telegram's Update as far as the route needs to know it; the adapter reads the rest.
const telegramUpdate = z.looseObject({ update_id: z.number().int().nonnegative() });

export function registerPlatformRoutes(app: App, options: PlatformRoutesOptions): void {
  app.get("/api/platforms", async () => options.status());

  app.post("/api/platforms/webhook/messages", { config: { jsonBody: true } }, async (request, reply) => {
    const adapter = options.webhook;
    if (adapter === null) throw notConfigured("webhook", "POST /api/platforms/webhook/messages");
    const body = parseWith(webhookInbound, jsonBodyOf(request), "the request body");
    requireHolder(options);
    try {
      await adapter.receive(body);
    } catch (error) {
      throw notCommitted(error);
    }
    return reply.code(202).send({ object: "platform.message", id: body.id, accepted: true });
  });

  app.post(
    "/api/platforms/telegram/webhook",
    { config: { jsonBody: true, public: true } },
    async (request, reply) => {
      const adapter = options.telegram;
      if (adapter === null || adapter.status().mode !== "webhook")
        throw notConfigured("telegram", "Telegram's webhook (mode: webhook)");
      const update = parseWith(telegramUpdate, jsonBodyOf(request), "the update");
      requireHolder(options);
      const secret = request.headers["x-telegram-bot-api-secret-token"];
      let taken: boolean;
      try {
        // The adapter reads an Update; its fields were checked by Telegram, the id here.
        taken = await adapter.receiveWebhook(
          update as Parameters<TelegramAdapter["receiveWebhook"]>[0],
          typeof secret === "string" ? secret : undefined,
        );
      } catch (error) {
        throw notCommitted(error);
      }
      if (!taken)
        throw new HttpError(
          401,
          "authentication_error",
          "invalid_webhook_secret",
          "the webhook secret does not match platforms.telegram.webhook_secret",
        );
      return reply.code(200).send({ ok: true });
    },
  );
}
