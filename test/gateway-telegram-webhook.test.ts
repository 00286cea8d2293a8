// Telegram in `mode: webhook` through a real gateway process (the built CLI) on a known port: the
// gateway registers its webhook URL and secret with the Telegram simulator, which then pushes each
// update to the gateway's /api/platforms/telegram/webhook with the secret header, as Telegram does.
// A push with a wrong or no secret is refused 401 and runs nothing; the same update pushed again
// runs once; the web door's Host guard lets the push through on a loopback name and on a name in
// gateway.allowed_hosts (what an operator behind a public name sets), and refuses any other name.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../src/llm/simulator/server.js";
import { startTelegramSim, type TelegramSim } from "../src/platforms/telegram/sim/server.js";
import { requireBuild } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { refusedGateway, startGateway } from "./helpers/gateway.js";
import { rawRequest } from "./helpers/raw-http.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const TOKEN = "123456789:AAHtest-token-for-the-webhook-tests";
const OWNER = 42;
const SECRET = "s3cret_for-the-hook";
const PUBLIC_NAME = "bot.example.com";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function setup() {
  const sim = await startSimulator();
  const tg = await startTelegramSim({ token: TOKEN, chats: [{ id: OWNER }] });
  open.push(sim, tg);
  const port = await freePort();
  const hook = `http://127.0.0.1:${port}/api/platforms/telegram/webhook`;
  const paths = profileWith(
    [
      "model: { provider: sim, name: echo }",
      `providers:\n  sim: { type: simulator, base_url: "${sim.url}" }`,
      "tools: { exec: { mode: full } }",
      `gateway: { drain_timeout: 2, allowed_hosts: ["${PUBLIC_NAME}"] }`,
      `platforms:\n  telegram: { token: "${TOKEN}", api_root: "${tg.apiRoot}", allowed_users: [${OWNER}], mode: webhook, webhook_url: "${hook}", webhook_secret: "${SECRET}" }`,
      "",
    ].join("\n"),
  );
  const gw = await startGateway(paths.home, ["--port", String(port)]);
  return { sim, tg, gw, url: gw.url, hook };
}

async function until(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function untilAsync(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const texts = (tg: TelegramSim) => tg.sentMessages(OWNER).map((m) => m.text);

/** An update as Telegram posts it: a message from OWNER in their chat. */
const update = (id: number, text: string) => ({
  update_id: id,
  message: {
    message_id: id,
    from: { id: OWNER, is_bot: false, first_name: "Owner" },
    chat: { id: OWNER, type: "private", first_name: "Owner" },
    date: Math.floor(Date.now() / 1000),
    text,
  },
});

function push(url: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${url}/api/platforms/telegram/webhook`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

describe("Telegram in mode webhook through a real gateway", () => {
  it("registers its URL and secret, and a message Telegram pushes is answered in the chat", async () => {
    const { tg, hook, gw } = await setup();
    const [set] = await tg.waitForCalls("setWebhook", 1, { timeoutMs: 15_000 });
    expect(set?.status).toBe(200);
    expect(set?.params).toMatchObject({ url: hook, secret_token: SECRET });
    // No polling in this mode.
    expect(tg.calls("getUpdates")).toHaveLength(0);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "pushed to you" });
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 20_000 });
    expect(texts(tg)).toEqual(["echo: pushed to you"]);
    // The push was taken (2xx): nothing is left to push.
    await until("the update taken", () => tg.pendingUpdates() === 0);
    expect(tg.calls("getUpdates")).toHaveLength(0);
    type Health = { components: { platforms: { status: string; platforms: Record<string, unknown>[] } } };
    let health: Health | undefined;
    // The delivered mark is written a moment after Telegram took the message.
    await untilAsync("the answer marked delivered", async () => {
      health = (await (await gw.fetch("/health")).json()) as Health;
      return health.components.platforms.platforms[0]?.pending === 0;
    });
    if (health === undefined) throw new Error("no health read");
    expect(health.components.platforms.status).toBe("ok");
    expect(health.components.platforms.platforms[0]).toMatchObject({
      platform: "telegram",
      mode: "webhook",
      connected: true,
      pending: 0,
    });
    expect(health.components.platforms.platforms[0]?.last_update_at).toEqual(expect.any(Number));
  });

  it("a push with a wrong secret, or none, is refused 401 and runs nothing", async () => {
    const { sim, tg, url } = await setup();
    await tg.waitForCalls("setWebhook", 1, { timeoutMs: 15_000 });
    const wrong = await push(url, update(900_001, "let me in"), {
      "x-telegram-bot-api-secret-token": "not-the-secret",
    });
    expect(wrong.status).toBe(401);
    const body = (await wrong.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("invalid_webhook_secret");
    expect(body.error.message).toMatch(/platforms\.telegram\.webhook_secret/);
    expect((await push(url, update(900_002, "me too"))).status).toBe(401);
    await new Promise((r) => setTimeout(r, 1500));
    expect(sim.requests()).toHaveLength(0);
    expect(texts(tg)).toEqual([]);
  });

  it("the same update pushed twice runs one turn and is answered once", async () => {
    const { sim, tg, url } = await setup();
    await tg.waitForCalls("setWebhook", 1, { timeoutMs: 15_000 });
    const headers = { "x-telegram-bot-api-secret-token": SECRET };
    expect((await push(url, update(900_010, "just once"), headers)).status).toBe(200);
    expect((await push(url, update(900_010, "just once"), headers)).status).toBe(200);
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 2000));
    expect(sim.requests()).toHaveLength(1);
    expect(texts(tg)).toEqual(["echo: just once"]);
  });

  it("the Host guard: a name in gateway.allowed_hosts gets through with the secret, any other name is 421", async () => {
    const { sim, tg, url } = await setup();
    await tg.waitForCalls("setWebhook", 1, { timeoutMs: 15_000 });
    const port = new URL(url).port;
    const send = (host: string, id: number) =>
      rawRequest(url, "POST", "/api/platforms/telegram/webhook", {
        headers: {
          host,
          "content-type": "application/json",
          "x-telegram-bot-api-secret-token": SECRET,
        },
        body: JSON.stringify(update(id, `via ${host}`)),
      });
    const foreign = await send(`evil.example.net:${port}`, 900_020);
    expect(foreign.status).toBe(421);
    expect(foreign.body).toContain("gateway.allowed_hosts");
    // Behind a reverse proxy the Host is the public name, on another port (443).
    const proxied = await send(PUBLIC_NAME, 900_021);
    expect(proxied.status).toBe(200);
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 20_000 });
    expect(texts(tg)).toEqual([`echo: via ${PUBLIC_NAME}`]);
    expect(sim.requests()).toHaveLength(1);
  });

  it("refuses to start in mode webhook without webhook_secret: the route has no gateway key, so anyone could post as an allowed user", async () => {
    const tg = await startTelegramSim({ token: TOKEN, chats: [{ id: OWNER }] });
    open.push(tg);
    const port = await freePort();
    const paths = profileWith(
      [
        "model: { provider: simulator, name: echo }",
        `platforms:\n  telegram: { token: "${TOKEN}", api_root: "${tg.apiRoot}", allowed_users: [${OWNER}], mode: webhook, webhook_url: "http://127.0.0.1:${port}/api/platforms/telegram/webhook" }`,
        "",
      ].join("\n"),
    );
    const run = await refusedGateway(paths.home, ["--port", String(port)]);
    // 78: a config error (EX_CONFIG).
    expect(run.status).toBe(78);
    expect(run.output).toContain("platforms.telegram.webhook_secret: mode webhook needs webhook_secret");
    expect(run.output).toContain("openssl rand -hex 32");
    // Nothing was registered with Telegram.
    expect(tg.calls("setWebhook")).toHaveLength(0);
  });
});
