// The control API under /__control/ (a path no Bot API call can have, as those start with /bot),
// for a test that drives the simulator from another process. JSON in, and Telegram's own envelope
// out: {"ok":true,"result":...} or {"ok":false,"error_code":N,"description":"..."}. Calls to it are
// not recorded.
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { TenaxError } from "../../../../core/errors.js";
import { type App, jsonBodyOf } from "../../../../http/app.js";
import { parseWith } from "../../../../http/validate.js";
import type { TelegramSimDriver } from "../driver.js";
import { describedError } from "../errors.js";

export const CONTROL_PREFIX = "/__control";

const chatType = z.enum(["private", "group", "supergroup"]);
const chatSchema = z.strictObject({
  id: z.number().int(),
  type: chatType.optional(),
  title: z.string().optional(),
  is_forum: z.boolean().optional(),
});
const userSchema = z.strictObject({
  id: z.number().int(),
  first_name: z.string().optional(),
  username: z.string().optional(),
  last_name: z.string().optional(),
  language_code: z.string().optional(),
});
const fromSchema = z.union([z.number().int(), userSchema]).optional();
const messageSchema = z.strictObject({
  chat: z.union([z.number().int(), chatSchema]),
  from: fromSchema,
  text: z.string().min(1),
  message_thread_id: z.number().int().optional(),
  reply_to_message_id: z.number().int().optional(),
});
const pressSchema = z.strictObject({
  chat_id: z.number().int(),
  message_id: z.number().int(),
  data: z.string().min(1),
  from: fromSchema,
});
const number = (fallback: number) => z.coerce.number().int().min(0).default(fallback);
const waitMessagesQuery = z.object({
  chat_id: z.coerce.number().int(),
  count: number(1),
  timeout_ms: number(5000),
});
const waitCallsQuery = z.object({ method: z.string().min(1), count: number(1), timeout_ms: number(5000) });
const waitPollQuery = z.object({ timeout_ms: number(5000) });

const ok = (result: unknown) => ({ ok: true, result });

/** Run `act`, answering a TenaxError (a bad fault, an unknown chat) as a 400 that says it. */
async function control<T>(act: () => T | Promise<T>) {
  try {
    return ok(await act());
  } catch (error) {
    if (TenaxError.isInstance(error)) throw describedError(400, `Bad Request: ${error.message}`);
    throw error;
  }
}

/** A wait that ran out is a 408 saying what the simulator saw. */
async function waited<T>(act: () => Promise<T>) {
  try {
    return ok(await act());
  } catch (error) {
    if (error instanceof Error && !TenaxError.isInstance(error))
      throw describedError(408, `Request Timeout: ${error.message}`);
    throw error;
  }
}

const query = (request: FastifyRequest) => request.query as Record<string, unknown>;

export function registerControlRoutes(app: App, driver: TelegramSimDriver): void {
  const p = CONTROL_PREFIX;
  const json = { config: { jsonBody: true } };
  app.post(`${p}/chats`, json, async (request) =>
    control(() => {
      driver.registerChat(parseWith(chatSchema, jsonBodyOf(request)));
      return true;
    }),
  );
  app.post(`${p}/messages`, json, async (request) =>
    control(() => driver.injectMessage(parseWith(messageSchema, jsonBodyOf(request)))),
  );
  app.post(`${p}/callback-queries`, json, async (request) =>
    control(() => driver.pressButton(parseWith(pressSchema, jsonBodyOf(request)))),
  );
  app.post(`${p}/faults`, json, async (request) =>
    control(() => {
      driver.fault(jsonBodyOf(request));
      return { queued: driver.faultsQueued() };
    }),
  );
  // The body is optional: none means a 502 outage.
  app.post(`${p}/outage`, json, async (request, reply) =>
    control(() => {
      driver.startOutage(request.body, (refuse) => reply.raw.once("finish", refuse));
      return true;
    }),
  );
  app.delete(`${p}/outage`, async () => control(() => driver.liftOutage().then(() => true)));
  app.post(`${p}/release-hangs`, async () => control(() => ({ released: driver.releaseHangs() })));
  app.post(`${p}/reset`, async () => control(() => driver.reset() ?? true));
  app.get(`${p}/calls`, async (request) => {
    const method = query(request).method;
    return ok(driver.calls(typeof method === "string" ? method : undefined));
  });
  app.get<{ Params: { chat: string } }>(`${p}/chats/:chat/messages`, async (request) =>
    ok(driver.sentMessages(Number(request.params.chat))),
  );
  app.get(`${p}/chat-actions`, async (request) => {
    const chat = query(request).chat_id;
    return ok(driver.chatActions(chat === undefined ? undefined : Number(chat)));
  });
  app.get(`${p}/callback-answers`, async () => ok(driver.callbackAnswers()));
  app.get(`${p}/state`, async () => {
    const state = driver.state;
    return ok({
      pending_updates: state.updates.length,
      polls_held: state.pollsHeld,
      faults_queued: driver.faultsQueued(),
      outage: state.faults.outage,
      webhook: state.webhook,
      chats: [...state.chats.values()].map((c) => c.chat),
    });
  });
  app.get(`${p}/wait/messages`, async (request) => {
    const q = parseWith(waitMessagesQuery, query(request), "the query");
    return waited(() => driver.waitForMessages(q.chat_id, q.count, { timeoutMs: q.timeout_ms }));
  });
  app.get(`${p}/wait/poll`, async (request) => {
    const q = parseWith(waitPollQuery, query(request), "the query");
    return waited(() => driver.waitForPoll({ timeoutMs: q.timeout_ms }).then(() => true));
  });
  app.get(`${p}/wait/calls`, async (request) => {
    const q = parseWith(waitCallsQuery, query(request), "the query");
    return waited(() => driver.waitForCalls(q.method, q.count, { timeoutMs: q.timeout_ms }));
  });
}
