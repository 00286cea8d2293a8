// `platforms` in config.yaml: the chat platforms the gateway connects to. Each is off until its
// section is written; a token is a secret (secrets.ts redacts `platforms.*.token`).
import { z } from "zod";
import { httpUrl, intBetween, positiveInt, text } from "./schema-parts.js";

/** The public Bot API; tests and self-hosted Bot API servers point `api_root` elsewhere. */
export const TELEGRAM_API_ROOT = "https://api.telegram.org";

const botToken = z
  .string({ error: "expected a bot token, e.g. 123456789:AAE...; @BotFather gives it" })
  .regex(/^\d+:[A-Za-z0-9_-]{20,}$/, {
    error:
      "expected a bot token of the form 123456789:AAE... (digits, a colon, then the secret); @BotFather gives it",
  });

const telegram = z
  .strictObject({
    token: botToken,
    api_root: httpUrl.default(TELEGRAM_API_ROOT),
    /** Telegram user ids that reach the agent; anyone else gets one refusal and nothing runs. */
    allowed_users: z
      .array(positiveInt("a Telegram user id (a number)"), { error: "expected a list of Telegram user ids" })
      .default([]),
    mode: z.enum(["polling", "webhook"], { error: "expected polling or webhook" }).default("polling"),
    /** Seconds a getUpdates long poll waits for news. */
    poll_timeout: intBetween(1, 50).default(30),
    /** mode webhook: the public https URL Telegram posts to, and the secret it sends with each post (required). */
    webhook_url: httpUrl.optional(),
    webhook_secret: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,256}$/, { error: "expected 1-256 characters of A-Z, a-z, 0-9, _ and -" })
      .optional(),
  })
  .superRefine((value, ctx) => {
    if (value.mode === "webhook" && value.webhook_url === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["webhook_url"],
        message: "mode webhook needs webhook_url: the public URL Telegram posts updates to",
      });
    // The route Telegram posts to takes no gateway key (Telegram cannot send one): without the
    // secret, anyone who can reach it could post an update as an allowed user.
    if (value.mode === "webhook" && value.webhook_secret === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["webhook_secret"],
        message:
          "mode webhook needs webhook_secret: it is how the gateway tells Telegram's posts from anyone else's (make one with: openssl rand -hex 32)",
      });
  });

/** The generic webhook platform: automation tools post messages in and get replies posted back. */
const webhook = z.strictObject({
  /** Where replies, notices and approval requests are posted (JSON). */
  callback_url: httpUrl,
  /** Sent as `Authorization: Bearer TOKEN` with each callback. */
  token: text("a non-empty token for the callback's Authorization header").optional(),
});

export const platformsSchema = z.strictObject({
  telegram: telegram.optional(),
  webhook: webhook.optional(),
});
export type PlatformsConfig = z.infer<typeof platformsSchema>;
export type TelegramConfig = NonNullable<PlatformsConfig["telegram"]>;
export type WebhookPlatformConfig = NonNullable<PlatformsConfig["webhook"]>;
