// The chat platforms' inbound routes on a gateway that does not hold the platforms: nothing is
// taken (the adapter never sees it), and the answer is 503 platforms_not_held naming the holder.
import { describe, expect, it } from "vitest";
import { createApp } from "../../http/app.js";
import type { TelegramAdapter } from "../../platforms/telegram/adapter.js";
import { WebhookAdapter } from "../../platforms/webhook/adapter.js";
import { registerPlatformRoutes } from "./platforms.js";

const standby = {
  holder: false,
  held_by: "inst:i_holder",
  self: "inst:i_standby",
  detail: "the platforms lock is held by inst:i_holder (backend 42)",
};

function appWith(holder: boolean) {
  const received: unknown[] = [];
  const webhook = new WebhookAdapter({ callbackUrl: "http://127.0.0.1:9/cb" });
  void webhook.start(async (event) => {
    received.push(event);
  });
  // The route asks the adapter only its mode and to take the update.
  const telegram = {
    status: () => ({ mode: "webhook" }),
    receiveWebhook: async (update: unknown) => {
      received.push(update);
      return true;
    },
  } as unknown as TelegramAdapter;
  const app = createApp();
  registerPlatformRoutes(app, {
    webhook,
    telegram,
    status: () => ({}),
    holding: () => (holder ? { ...standby, holder: true, held_by: standby.self } : standby),
  });
  return { app, received };
}

const post = (url: string, payload: unknown) => ({
  method: "POST" as const,
  url,
  headers: { "content-type": "application/json" },
  payload: JSON.stringify(payload),
});

describe("the platforms' inbound routes and the platforms lock", () => {
  it("a standby takes nothing: 503 platforms_not_held, naming the holder, Retry-After 2", async () => {
    const { app, received } = appWith(false);
    const message = { id: "m1", chat_id: "c", user: { id: "u" }, text: "hi" };
    for (const request of [
      post("/api/platforms/webhook/messages", message),
      post("/api/platforms/telegram/webhook", { update_id: 7 }),
    ]) {
      const answer = await app.inject(request);
      expect(answer.statusCode, request.url).toBe(503);
      expect(answer.headers["retry-after"]).toBe("2");
      const error = answer.json<{ error: { code: string; message: string } }>().error;
      expect(error.code).toBe("platforms_not_held");
      expect(error.message).toMatch(
        /^gateway: this gateway \(inst:i_standby\) does not run the chat platforms, gateway inst:i_holder does/,
      );
    }
    expect(received).toEqual([]);
    await app.close();
  });

  it("the holder takes them", async () => {
    const { app, received } = appWith(true);
    const message = { id: "m1", chat_id: "c", user: { id: "u" }, text: "hi" };
    expect((await app.inject(post("/api/platforms/webhook/messages", message))).statusCode).toBe(202);
    expect((await app.inject(post("/api/platforms/telegram/webhook", { update_id: 7 }))).statusCode).toBe(
      200,
    );
    expect(received).toHaveLength(2);
    await app.close();
  });
});
