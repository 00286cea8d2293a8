// Two real gateway processes of one profile (separate homes, as separate hosts would have) on one
// PostgreSQL database, configured with the same Telegram bot against the local Bot API simulator:
// only the holder of the store's platforms lock polls (the simulator sees no 409), every message
// is answered exactly once, the standby's inbound routes answer 503 naming the holder, a cron
// result queued by the standby is sent by the holder, and after kill -9 of the holder the standby
// takes over within a bound (measured) and answers what waited exactly once.
import { writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../src/llm/simulator/server.js";
import { notResumed } from "../src/platforms/chat-texts.js";
import { startTelegramSim, type TelegramSim } from "../src/platforms/telegram/sim/server.js";
import { startCallbackServer } from "./helpers/callback-server.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, startGateway } from "./helpers/gateway.js";
import { closeAfterEach } from "./helpers/opened.js";
import { usePostgresCluster } from "./helpers/postgres.js";
import { profileWith } from "./helpers/temp-home.js";
import { until } from "./helpers/until.js";

beforeAll(() => requireBuild());
const cluster = usePostgresCluster();

const TOKEN = "123456789:AAHtest-token-for-the-holder-tests";
const OWNER = 42;
const OTHER = 77;

const opened = closeAfterEach();
/** How long a step of these tests may take, looked at every 50 ms. */
const STEP_MS = 30_000;

interface Holding {
  holder: boolean;
  held_by: string | null;
  self: string;
}

/** One LLM simulator, one Telegram simulator, one database; `homes` profiles configured alike. */
async function setup(homes: number, extra: (index: number) => string = () => "") {
  const sim = await startSimulator();
  const tg = await startTelegramSim({ token: TOKEN, chats: [{ id: OWNER }, { id: OTHER }] });
  const cb = await startCallbackServer();
  opened.add(sim, (s) => s.close());
  opened.add(tg, (t) => t.close());
  const url = await cluster().createDatabase();
  const paths = Array.from({ length: homes }, (_, i) => {
    const p = profileWith(
      [
        "model: { provider: sim, name: echo }",
        `providers:\n  sim: { type: simulator, base_url: "${sim.url}" }`,
        "gateway: { drain_timeout: 2 }",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the config names the variable, as users write it
        'store: { engine: postgres, url: "${TENAX_DATABASE_URL}" }',
        `platforms:\n  telegram: { token: "${TOKEN}", api_root: "${tg.apiRoot}", allowed_users: [${OWNER}, ${OTHER}], poll_timeout: 1 }\n  webhook: { callback_url: "${cb.url}" }`,
        extra(i),
        "",
      ].join("\n"),
    );
    writeFileSync(p.env, `TENAX_DATABASE_URL=${url}\n`, { mode: 0o600 });
    return p;
  });
  return { sim, tg, cb, paths };
}

async function gateway(home: string): Promise<GatewayProcess> {
  return opened.add(await startGateway(home), async (gw) => {
    if (gw.child.exitCode === null && gw.child.signalCode === null) {
      gw.child.kill("SIGKILL");
      await gw.exited;
    }
  });
}

async function holding(gw: GatewayProcess): Promise<Holding> {
  const body = (await (await gw.fetch("/api/platforms")).json()) as { holding: Holding };
  return body.holding;
}

const texts = (tg: TelegramSim, chat: number) => tg.sentMessages(chat).map((m) => m.text);
const conflicts = (tg: TelegramSim) => tg.calls("getUpdates").filter((c) => c.status === 409).length;

/** Each text once, nothing else: the chat's answers as a multiset. */
function expectOnce(tg: TelegramSim, chat: number, expected: string[]): void {
  expect([...texts(tg, chat)].sort()).toEqual([...expected].sort());
}

describe("two gateways of one profile on PostgreSQL: one holds the chat platforms", () => {
  it("only the holder polls; every message is answered once; the standby answers 503 naming the holder; a cron result the standby queues goes out through the holder", async () => {
    // Cron runs only on the second gateway, the standby: its result is queued there.
    const { tg, cb, paths } = await setup(2, (i) => (i === 0 ? "cron: { enabled: false }" : ""));
    const [pa, pb] = paths as [(typeof paths)[0], (typeof paths)[0]];
    const a = await gateway(pa.home);
    await until(async () => (await holding(a)).holder, STEP_MS, "the first gateway holds the platforms", 50);
    const b = await gateway(pb.home);
    const self = (await holding(a)).self;
    expect(self).toMatch(/^inst:i_/);
    await until(
      async () => (await holding(b)).held_by === self,
      STEP_MS,
      "the second gateway names the holder",
      50,
    );
    expect(await holding(b)).toMatchObject({ holder: false, held_by: self });
    expect(b.stdout()).toMatch(/chat platforms: held by inst:i_\w+; this gateway serves everything else/);
    const health = (await (await b.fetch("/health")).json()) as {
      components: { platforms: { status: string; detail: string; holding: Holding } };
    };
    expect(health.components.platforms.status).toBe("ok");
    expect(health.components.platforms.holding).toMatchObject({ holder: false, held_by: self });
    expect(health.components.platforms.detail).toContain(`held by ${self}, not this one`);

    const sent: Record<number, string[]> = { [OWNER]: [], [OTHER]: [] };
    for (let i = 0; i < 12; i++) {
      const chat = i % 3 === 0 ? OTHER : OWNER;
      const text = `message ${i}`;
      sent[chat]?.push(`echo: ${text}`);
      tg.injectMessage({ chat, from: chat, text });
    }
    await tg.waitForMessages(OWNER, sent[OWNER]?.length ?? 0, { timeoutMs: 60_000 });
    await tg.waitForMessages(OTHER, sent[OTHER]?.length ?? 0, { timeoutMs: 60_000 });

    // The webhook platform's route: the standby takes nothing, and says who does; the holder takes it.
    const message = { id: "w-1", chat_id: "c1", user: { id: "u1", name: "Ann" }, text: "via webhook" };
    const refused = await b.fetch("/api/platforms/webhook/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(message),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("2");
    const error = ((await refused.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("platforms_not_held");
    expect(error.message).toContain(`gateway ${self} does`);
    const taken = await a.fetch("/api/platforms/webhook/messages", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(message),
    });
    expect(taken.status).toBe(202);
    await until(() => cb.taken().length === 1, STEP_MS, "the webhook answer", 50);

    // A cron job on the standby: its result is queued there and sent by the holder, once.
    const add = await tenaxAsync(pb.home, [
      "cron",
      "add",
      "morning",
      "--schedule",
      "in 2s",
      "--prompt",
      "good morning",
      "--deliver",
      `telegram:${OTHER}`,
    ]);
    expect(add.status).toBe(0);
    const cronText = "morning\n\necho: good morning";
    await until(() => texts(tg, OTHER).includes(cronText), 60_000, "the cron result in its chat", 50);
    // It ran on the standby (cron is off on the holder), which has no Telegram channel to send it.
    expect(b.stdout()).toMatch(/morning: run morning\/\S+ ended ok/);
    expect(a.stdout()).not.toMatch(/morning: run/);

    // Settle, then: each answer once, one poller all along.
    await new Promise((r) => setTimeout(r, 2_500));
    expectOnce(tg, OWNER, sent[OWNER] ?? []);
    expectOnce(tg, OTHER, [...(sent[OTHER] ?? []), cronText]);
    expect(cb.taken().map((p) => p.body.text)).toEqual(["echo: via webhook"]);
    expect(conflicts(tg)).toBe(0);
    expect(tg.calls("getUpdates").length).toBeGreaterThan(0);
  }, 120_000);

  it("kill -9 of the holder: the standby takes over within seconds, answers what waited and what came after exactly once", async () => {
    const { sim, tg, paths } = await setup(2);
    const [pa, pb] = paths as [(typeof paths)[0], (typeof paths)[0]];
    const a = await gateway(pa.home);
    await until(async () => (await holding(a)).holder, STEP_MS, "the first gateway holds the platforms", 50);
    const b = await gateway(pb.home);
    const self = (await holding(a)).self;
    await until(async () => (await holding(b)).held_by === self, STEP_MS, "the second gateway stands by", 50);

    tg.injectMessage({ chat: OWNER, from: OWNER, text: "before" });
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 30_000 });
    // At the kill: one message's turn runs (its model call hangs), one more waits behind it on its
    // lane, both committed in the inbox (Telegram was told: nothing is pending there).
    sim.script([{ type: "hang", phase: "before_headers" }]);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "running" });
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "queued" });
    await until(() => sim.requests().length === 2, STEP_MS, "the running turn's model call", 50);
    await until(() => tg.pendingUpdates() === 0, STEP_MS, "both updates committed and confirmed", 50);

    const killed = Date.now();
    a.child.kill("SIGKILL");
    await a.exited;
    // Sent while no gateway holds the platforms: Telegram keeps it for the next poller.
    tg.injectMessage({ chat: OTHER, from: OTHER, text: "after" });
    await until(async () => (await holding(b)).holder, 10_000, "the standby holds the platforms", 50);
    const took = Date.now() - killed;
    console.log(`platforms: the standby took them ${took} ms after kill -9 of their holder`);
    expect(took).toBeLessThan(10_000);
    expect(await holding(b)).toMatchObject({ holder: true, held_by: (await holding(b)).self });

    await tg.waitForMessages(OTHER, 1, { timeoutMs: 30_000 });
    await tg.waitForMessages(OWNER, 3, { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 3_000));
    // The message whose turn the kill cut is answered once: by that turn's result (the standby's
    // watchdog resumed it; the inbox waits for it) or, were it not resumed, by the /retry advice.
    // The one behind it waits for it, then runs: its turn sees both messages (the echo says them).
    const owner = texts(tg, OWNER);
    expect(owner).toHaveLength(3);
    expect(owner[0]).toBe("echo: before");
    // (The echo model repeats what it was sent: a resumed turn's question carries the resume note.)
    expect(owner[1] === notResumed() || /^echo: running(\n|$)/.test(owner[1] ?? "")).toBe(true);
    expect(owner[2]).toMatch(/^echo: (running\n\n)?(\[Tenax[^\n]*\n\n)?queued$/);
    expectOnce(tg, OTHER, ["echo: after"]);
    expect(conflicts(tg)).toBe(0);
    expect(b.stdout()).toMatch(/chat platforms: this gateway \(inst:i_\w+\) holds them now: starting them/);
  }, 120_000);
});
