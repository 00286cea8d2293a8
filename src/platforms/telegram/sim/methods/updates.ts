// How the bot gets its updates: getUpdates (offset confirms, limit, a held long poll, allowed_updates)
// or a webhook (setWebhook, deleteWebhook, getWebhookInfo). Telegram allows one or the other: while a
// webhook is set getUpdates is a 409.
import { z } from "zod";
import { botError } from "../errors.js";
import { type BotMethod, parseParams } from "./context.js";

const WEBHOOK_ACTIVE =
  "can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";
const TERMINATED = "terminated by other getUpdates request; make sure that only one bot instance is running";

const allowedUpdates = z.array(z.string());

const getUpdatesSchema = z.looseObject({
  offset: z.number().int().optional(),
  limit: z.number().int().optional(),
  timeout: z.number().int().min(0).optional(),
  allowed_updates: allowedUpdates.optional(),
});

export const getUpdates: BotMethod = async ({ state, polls, params, closed }) => {
  if (state.webhook) throw botError(409, WEBHOOK_ACTIVE);
  const p = parseParams(getUpdatesSchema, params);
  // A newer call ends the held one, so the bot that polls last is the one that gets updates.
  polls.terminate(botError(409, TERMINATED));
  if (p.allowed_updates !== undefined) state.allowedUpdates = known(p.allowed_updates);
  if (p.offset !== undefined) state.confirm(p.offset);
  const limit = Math.min(Math.max(p.limit ?? 100, 1), 100);
  // The poll may be held while updates of other types queue up: it takes only those it may see.
  const take = () => state.updates.slice(0, limit);
  return polls.hold(take, Math.min(p.timeout ?? 0, 50_000), closed);
};

const setWebhookSchema = z.looseObject({
  url: z.string(),
  secret_token: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,256}$/, "only A-Z, a-z, 0-9, _ and - are allowed, 1 to 256 of them")
    .optional(),
  max_connections: z.number().int().min(1).max(100).optional(),
  allowed_updates: allowedUpdates.optional(),
  drop_pending_updates: z.boolean().optional(),
});

export const setWebhook: BotMethod = ({ state, polls, pusher, params }) => {
  const p = parseParams(setWebhookSchema, params);
  if (p.drop_pending_updates) state.updates = [];
  if (p.url === "") {
    state.webhook = null;
    state.changed();
    return true;
  }
  let url: URL;
  try {
    url = new URL(p.url);
  } catch {
    throw botError(400, "bad webhook: Failed to resolve host: Name or service not known");
  }
  // Telegram takes only HTTPS; the simulator also takes HTTP so a test's endpoint need no certificate.
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw botError(400, "bad webhook: An HTTPS URL must be provided for webhook");
  polls.terminate(botError(409, WEBHOOK_ACTIVE));
  state.webhook = {
    url: p.url,
    max_connections: p.max_connections ?? 40,
    ...(p.secret_token !== undefined ? { secret_token: p.secret_token } : {}),
    ...(p.allowed_updates !== undefined ? { allowed_updates: known(p.allowed_updates) } : {}),
  };
  state.changed();
  pusher.kick();
  return true;
};

const deleteWebhookSchema = z.looseObject({ drop_pending_updates: z.boolean().optional() });

export const deleteWebhook: BotMethod = ({ state, params }) => {
  const p = parseParams(deleteWebhookSchema, params);
  if (p.drop_pending_updates) state.updates = [];
  state.webhook = null;
  state.changed();
  return true;
};

export const getWebhookInfo: BotMethod = ({ state }) => {
  const hook = state.webhook;
  const info: Record<string, unknown> = {
    url: hook?.url ?? "",
    has_custom_certificate: false,
    pending_update_count: state.updates.length,
  };
  if (!hook) return info;
  info.max_connections = hook.max_connections;
  if (hook.last_error_date !== undefined) info.last_error_date = hook.last_error_date;
  if (hook.last_error_message !== undefined) info.last_error_message = hook.last_error_message;
  if (hook.allowed_updates) info.allowed_updates = hook.allowed_updates;
  return info;
};

/** The list as asked; [] means Telegram's default (every type the simulator makes). */
function known(types: string[]): string[] {
  return [...new Set(types)];
}
