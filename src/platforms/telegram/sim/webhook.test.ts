// Webhook push mode against a real HTTP endpoint on 127.0.0.1: updates POSTed in order with the
// secret header, retried after the endpoint fails, the pending count and last error in
// getWebhookInfo, and getUpdates refused with 409 while the webhook is set.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Bot, GrammyError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTelegramSim, type TelegramSim } from "./server.js";

interface Received {
  secret: string | undefined;
  body: { update_id: number; message?: { text?: string } };
}

let sim: TelegramSim;
let endpoint: Server;
let url: string;
let received: Received[];
/** The statuses the endpoint answers, in turn; 200 once they are used up. */
let statuses: number[];

beforeEach(async () => {
  sim = await startTelegramSim({ webhookBackoff: { initialMs: 20, maxMs: 100 } });
  received = [];
  statuses = [];
  endpoint = createServer((req, res) => {
    void readBody(req).then((text) => {
      const status = statuses.shift() ?? 200;
      const secret = req.headers["x-telegram-bot-api-secret-token"];
      received.push({ secret: typeof secret === "string" ? secret : undefined, body: JSON.parse(text) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/hook`;
});

afterEach(async () => {
  await sim.close();
  endpoint.closeAllConnections();
  await new Promise((resolve) => endpoint.close(resolve));
});

async function readBody(req: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of req) text += String(chunk);
  return text;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
}

describe("Telegram simulator: webhooks", () => {
  it("pushes updates in order with the secret header, and retries after the endpoint fails", async () => {
    const api = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } }).api;
    statuses = [500, 500];
    await api.setWebhook(url, { secret_token: "s3cret_-" });
    const first = sim.injectMessage({ chat: 1, text: "one" });
    const second = sim.injectMessage({ chat: 1, text: "two" });
    await until(() => received.length === 4, "four pushes");
    expect(received.map((r) => r.body.update_id)).toEqual([
      first.update_id,
      first.update_id,
      first.update_id,
      second.update_id,
    ]);
    expect(received.every((r) => r.secret === "s3cret_-")).toBe(true);
    expect(received[3]?.body.message?.text).toBe("two");
    await until(() => sim.pendingUpdates() === 0, "no pending updates");
    const info = await api.getWebhookInfo();
    expect(info).toMatchObject({
      url,
      pending_update_count: 0,
      last_error_message: "Wrong response from the webhook: 500 Internal Server Error",
    });
    expect(info.last_error_date).toBeGreaterThan(0);
  });

  it("counts pending updates while the endpoint is down, and says why", async () => {
    const api = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } }).api;
    endpoint.closeAllConnections();
    await new Promise((resolve) => endpoint.close(resolve));
    await api.setWebhook(url);
    sim.injectMessage({ chat: 1, text: "one" });
    sim.injectMessage({ chat: 1, text: "two" });
    await until(() => sim.calls().length > 0 && sim.pendingUpdates() === 2, "two pending");
    let info = await api.getWebhookInfo();
    for (let i = 0; i < 100 && info.last_error_message === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      info = await api.getWebhookInfo();
    }
    expect(info).toMatchObject({ url, pending_update_count: 2, last_error_message: "Connection refused" });
    // deleteWebhook can drop what is still pending.
    await api.deleteWebhook({ drop_pending_updates: true });
    expect(await api.getWebhookInfo()).toMatchObject({ url: "", pending_update_count: 0 });
    endpoint = createServer();
    await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  });

  it("refuses getUpdates with 409 while a webhook is set, and takes it again once deleted", async () => {
    const bot = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } });
    await bot.api.setWebhook(url);
    const error = await bot.api.getUpdates().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GrammyError);
    expect((error as GrammyError).error_code).toBe(409);
    expect((error as GrammyError).description).toBe(
      "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
    );
    const raw = await fetch(`${sim.apiRoot}/bot${sim.token}/getUpdates`);
    expect(raw.status).toBe(409);
    await bot.api.deleteWebhook();
    expect(await bot.api.getUpdates()).toEqual([]);
  });

  it("sends no secret header when none was set", async () => {
    const api = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } }).api;
    await api.setWebhook(url);
    sim.injectMessage({ chat: 1, text: "one" });
    await until(() => received.length === 1, "one push");
    expect(received[0]?.secret).toBeUndefined();
  });
});
