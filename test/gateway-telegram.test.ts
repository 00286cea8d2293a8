// Telegram through a real gateway process (the built CLI): the real grammY-based adapter polls a
// local Bot API server (the Telegram simulator, on 127.0.0.1) and the agent runs on the simulator
// provider over real HTTP. What a user of the bot sees: answers in their chat, in order, strangers
// refused without reaching the model, one notice per chat at a stop, "back online" and the
// answers after the restart, every message delivered exactly once through faults and a kill -9,
// and a dangerous command run only when approved with the button.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSimulator } from "../src/llm/simulator/server.js";
import { startTelegramSim, type TelegramSim } from "../src/platforms/telegram/sim/server.js";
import { markRestartRequested } from "../src/profile/restart-marker.js";
import { scriptApproveThenDeny } from "./helpers/approval-victims.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { type GatewayProcess, startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const TOKEN = "123456789:AAHtest-token-for-the-gateway-tests";
const OWNER = 42;
const GROUP = -1001;

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function setup(options: { exec?: string; allowed?: number[]; roots?: string[] } = {}) {
  const sim = await startSimulator();
  const tg = await startTelegramSim({
    token: TOKEN,
    chats: [{ id: OWNER }, { id: 77 }, { id: GROUP, type: "group" }],
  });
  open.push(sim, tg);
  const allowed = options.allowed ?? [OWNER, 5, 6];
  const paths = profileWith(
    [
      "model: { provider: sim, name: echo }",
      `providers:\n  sim: { type: simulator, base_url: "${sim.url}" }`,
      `tools: { exec: { mode: ${options.exec ?? "full"} }, files: { roots: ${JSON.stringify(options.roots ?? [])} } }`,
      "gateway: { drain_timeout: 2 }",
      `platforms:\n  telegram: { token: "${TOKEN}", api_root: "${tg.apiRoot}", allowed_users: [${allowed.join(", ")}], poll_timeout: 1 }`,
      "",
    ].join("\n"),
  );
  return { sim, tg, paths, home: paths.home };
}

async function gateway(home: string): Promise<GatewayProcess> {
  const gw = await startGateway(home);
  open.push({
    close: async () => {
      if (gw.child.exitCode === null && gw.child.signalCode === null) {
        gw.child.kill("SIGKILL");
        await gw.exited;
      }
    },
  });
  return gw;
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The last user message of a model call's body. */
function lastUserOf(body: unknown): string | undefined {
  const users = (body as { messages: { role: string; content: string }[] }).messages.filter(
    (m) => m.role === "user",
  );
  return users.at(-1)?.content;
}

const texts = (tg: TelegramSim, chat: number) => tg.sentMessages(chat).map((m) => m.text);

/** Messages the gateway's outbox holds unsent for Telegram (its /health says). */
async function unsent(gw: GatewayProcess): Promise<number> {
  const health = (await (await gw.fetch("/health")).json()) as {
    components: { platforms: { platforms: { platform: string; pending: number }[] } };
  };
  const row = health.components.platforms.platforms.find((p) => p.platform === "telegram");
  if (row === undefined) throw new Error("the gateway's /health names no telegram platform");
  return row.pending;
}

/**
 * Instead of waiting a while to see that nothing more comes to `chat`: a later message from an
 * allowed user is answered there, and then the outbox holds nothing unsent. One chat's messages
 * go in order, so whatever was queued for the chat before that answer arrived before it, and
 * whatever was queued after was sent before the outbox was empty: the chat's texts are final.
 * The later answer is "echo: later", last.
 */
async function settled(gw: GatewayProcess, tg: TelegramSim, chat: number, from = OWNER): Promise<void> {
  tg.injectMessage({ chat, from, text: "later" });
  await until("the later message answered", () => texts(tg, chat).includes("echo: later"));
  await until("nothing left unsent", async () => (await unsent(gw)) === 0);
}

describe("Telegram through a real gateway", () => {
  it("an allowed user's message is answered in its chat; a stranger is refused once and never reaches the model", async () => {
    const { sim, tg, home } = await setup();
    const gw = await gateway(home);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "hello there" });
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 20_000 });
    expect(texts(tg, OWNER)).toEqual(["echo: hello there"]);
    // Typing was shown while the turn ran.
    expect(tg.chatActions(OWNER).some((a) => a.action === "typing")).toBe(true);
    tg.injectMessage({ chat: 77, from: 77, text: "let me in" });
    tg.injectMessage({ chat: 77, from: 77, text: "please" });
    await tg.waitForMessages(77, 1, { timeoutMs: 20_000 });
    // Each update is handled (a refusal queued) before it is confirmed: once both are, and the
    // outbox is empty, a second refusal would have been sent.
    await until("both updates confirmed", () => tg.pendingUpdates() === 0);
    await until("nothing left unsent", async () => (await unsent(gw)) === 0);
    expect(texts(tg, 77)).toHaveLength(1);
    expect(texts(tg, 77)[0]).toContain("Your telegram user id is 77");
    // A turn the stranger's updates had started would have called the model before the owner's
    // later message (polled after both were handled) was answered: only the owner's two did.
    await settled(gw, tg, OWNER);
    expect(texts(tg, 77)).toHaveLength(1);
    expect(texts(tg, OWNER)).toEqual(["echo: hello there", "echo: later"]);
    expect(sim.requests().map((r) => lastUserOf(r.body))).toEqual(["hello there", "later"]);
    // Nothing of the stranger's was stored: no session, the store knows one chat.
    const sessions = (await (await gw.fetch("/api/sessions")).json()) as { data: { source?: string }[] };
    expect(sessions.data).toHaveLength(1);
    const health = (await (await gw.fetch("/health")).json()) as {
      components: { platforms: { status: string; platforms: { platform: string; connected: boolean }[] } };
    };
    expect(health.components.platforms).toMatchObject({
      status: "ok",
      platforms: [{ platform: "telegram", connected: true, pending: 0 }],
    });
  });

  it("three messages sent at once to one chat are answered in order, one turn at a time", async () => {
    const { sim, tg, home } = await setup();
    sim.script([
      { type: "reply", text: "first answer", chunk_delay_ms: 200 },
      { type: "reply", text: "second answer" },
      { type: "reply", text: "third answer" },
    ]);
    await gateway(home);
    for (const text of ["one", "two", "three"]) tg.injectMessage({ chat: OWNER, from: OWNER, text });
    await tg.waitForMessages(OWNER, 3, { timeoutMs: 30_000 });
    expect(texts(tg, OWNER)).toEqual(["first answer", "second answer", "third answer"]);
    // Each turn saw the messages before it: the second call's last user message is "two".
    const lastUser = sim.requests().map((r) => lastUserOf(r.body));
    expect(lastUser).toEqual(["one", "two", "three"]);
  });

  it("two sessions in one group with running turns: SIGTERM tells the group once; after the restart, back online once, then both answers", async () => {
    const { sim, tg, home } = await setup();
    // Both turns hang until the drain gives up on them; after the restart they are resumed.
    sim.script([
      { type: "hang", phase: "before_headers" },
      { type: "hang", phase: "before_headers" },
    ]);
    const first = await gateway(home);
    tg.injectMessage({ chat: GROUP, from: 5, text: "report for five" });
    tg.injectMessage({ chat: GROUP, from: 6, text: "report for six" });
    await until("two model calls under way", () => sim.requests().length === 2);
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    const notices = texts(tg, GROUP);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/shutting down/);
    sim.script([
      { type: "reply", text: "answer one" },
      { type: "reply", text: "answer two" },
    ]);
    const second = await gateway(home);
    await tg.waitForMessages(GROUP, 4, { timeoutMs: 30_000 });
    await settled(second, tg, GROUP, 5);
    const after = texts(tg, GROUP).slice(1);
    expect(after).toHaveLength(4);
    expect(after[0]).toMatch(/back online/);
    expect([...after.slice(1, 3)].sort()).toEqual(["answer one", "answer two"]);
    expect(after[3]).toBe("echo: later");
  });

  it("a stop asked for by tenax gateway restart says restarting, with the /retry advice", async () => {
    const { sim, tg, home, paths } = await setup();
    sim.script([{ type: "hang", phase: "before_headers" }]);
    const gw = await gateway(home);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "long job" });
    await until("the model call under way", () => sim.requests().length === 1);
    // What `tenax gateway restart` writes before it asks systemd to restart the unit.
    markRestartRequested(paths);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(texts(tg, OWNER)).toEqual([
      "Tenax is restarting; your running request may be cut short. Send /retry if no answer comes.",
    ]);
  });

  it("a turn that ends during the drain is answered before the gateway exits, after the stop notice", async () => {
    const { sim, tg, home } = await setup();
    sim.script([{ type: "reply", text: "slow answer", chunk_size: 1, chunk_delay_ms: 100 }]);
    const gw = await gateway(home);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "take your time" });
    await until("the model call under way", () => sim.requests().length === 1);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(texts(tg, OWNER)).toEqual([
      "Tenax is shutting down; your running request is cut short.",
      "slow answer",
    ]);
  });

  it("a stop notice Telegram never answers does not hold the stop: the gateway exits within the drain and the notice's bound", async () => {
    const { sim, tg, home } = await setup();
    sim.script([{ type: "hang", phase: "before_headers" }]);
    const gw = await gateway(home);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "long job" });
    await until("the model call under way", () => sim.requests().length === 1);
    tg.fault({ type: "hang", method: "sendMessage" });
    const t0 = Date.now();
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    // drain_timeout 2 s and the notice's 3 s bound, with room for a loaded machine; a stop that
    // waited for the hung send would take the Bot API call's own timeout (16 s) or forever.
    expect(Date.now() - t0).toBeLessThan(12_000);
    expect(gw.stdout() + gw.stderr()).toMatch(/told 0 of 1 chat\(s\) with a running turn/);
  });

  it("a cron job delivering to telegram:CHAT sends its result there, once", async () => {
    const { tg, home } = await setup();
    // The gateway runs first: a job that fell due before any scheduler watched is a catch-up run
    // for a missed time (said so in its message), which a slow start would make of this one.
    const gw = await gateway(home);
    const add = await tenaxAsync(home, [
      "cron",
      "add",
      "morning",
      "--schedule",
      "in 2s",
      "--prompt",
      "good morning",
      "--deliver",
      `telegram:${OWNER}`,
    ]);
    expect(add.stderr).toBe("");
    expect(add.status).toBe(0);
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 30_000 });
    // The one-shot ran and is due no more; its one run's result was sent, once.
    const job = async () =>
      (await (await gw.fetch("/api/jobs/morning")).json()) as {
        next_due_at: number | null;
        last: { ended_at: number | null } | null;
      };
    await until("the job's run ended, and nothing due", async () => {
      const j = await job();
      return j.next_due_at === null && (j.last?.ended_at ?? null) !== null;
    });
    const runs = (await (await gw.fetch("/api/jobs/morning/runs")).json()) as { data: unknown[] };
    expect(runs.data).toHaveLength(1);
    await settled(gw, tg, OWNER);
    expect(texts(tg, OWNER)).toEqual(["morning\n\necho: good morning", "echo: later"]);
    expect(tg.sentMessages(OWNER)[0]).toMatchObject({ parse_mode: "HTML" });
  });

  it("sendMessage failing 502 twice, then 429 retry_after 2, then ok: the answer arrives exactly once", async () => {
    const { tg, home } = await setup();
    const gw = await gateway(home);
    tg.fault([
      { type: "error", method: "sendMessage", status: 502, times: 2 },
      { type: "rate_limit", method: "sendMessage", retry_after: 2 },
    ]);
    const started = Date.now();
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "through the storm" });
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 30_000 });
    // The message is kept a moment before its call's answer is written down.
    await until("the fourth call answered", () => tg.calls("sendMessage")[3]?.status === 200, 5_000);
    const attempts = tg.calls("sendMessage");
    expect(attempts.map((c) => c.status)).toEqual([502, 502, 429, 200]);
    // The fourth attempt waited the 2 s Telegram asked for after the 429.
    const [, , limited, ok] = attempts;
    expect((ok?.at ?? 0) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
    expect(Date.now() - started).toBeLessThan(30_000);
    await settled(gw, tg, OWNER);
    expect(texts(tg, OWNER)).toEqual(["echo: through the storm", "echo: later"]);
  });

  it("kill -9 with answers in the outbox: after the restart each arrives exactly once", async () => {
    const { tg, home } = await setup();
    // Telegram refuses every send while the first gateway runs: its answers wait in the outbox.
    tg.fault({ type: "error", method: "sendMessage", status: 502, times: 10_000 });
    const first = await gateway(home);
    for (const text of ["alpha", "beta"]) tg.injectMessage({ chat: OWNER, from: OWNER, text });
    await until("both answers queued and tried", async () => {
      const h = (await (await first.fetch("/health")).json()) as {
        components: { platforms: { platforms: { pending: number }[] } };
      };
      return h.components.platforms.platforms[0]?.pending === 2 && tg.calls("sendMessage").length >= 2;
    });
    first.child.kill("SIGKILL");
    await first.exited;
    tg.reset();
    const second = await gateway(home);
    await tg.waitForMessages(OWNER, 2, { timeoutMs: 30_000 });
    await settled(second, tg, OWNER);
    expect(texts(tg, OWNER)).toEqual(["echo: alpha", "echo: beta", "echo: later"]);
  });

  it("kill -9 during a send: the restart takes the dead gateway's lease over at once", async () => {
    const { tg, home } = await setup();
    // The send hangs: the first gateway holds the entry's lease (10 s attempt + 30 s margin) when killed.
    tg.fault({ type: "hang", method: "sendMessage" });
    const first = await gateway(home);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "alpha" });
    await until("the answer's send under way", () => tg.calls("sendMessage").length >= 1);
    first.child.kill("SIGKILL");
    await first.exited;
    tg.reset();
    const second = await gateway(home);
    // Well before the lease would end: the lease names a process that is gone.
    await tg.waitForMessages(OWNER, 1, { timeoutMs: 20_000 });
    await settled(second, tg, OWNER);
    expect(texts(tg, OWNER)).toEqual(["echo: alpha", "echo: later"]);
  });

  it("a dangerous command approved with the button runs; denied, it does not", async () => {
    const victims = tempDir("tenax-victims-");
    const { sim, tg, home } = await setup({ exec: "ask", roots: [victims] });
    const { a, b } = scriptApproveThenDeny(sim, victims);
    await gateway(home);
    const press = async (data: (buttons: string[]) => string) => {
      let message: ReturnType<TelegramSim["sentMessages"]>[number] | undefined;
      await until("an approval message with buttons", () => {
        message = tg.sentMessages(OWNER).find((m) => m.reply_markup && m.edits.length === 0);
        return message !== undefined;
      });
      const buttons = (message?.reply_markup?.inline_keyboard ?? [])
        .flat()
        .map((b) => ("callback_data" in b ? String(b.callback_data) : ""));
      tg.pressButton({
        chat_id: OWNER,
        message_id: message?.message_id ?? 0,
        data: data(buttons),
        from: OWNER,
      });
    };
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "clean a" });
    await press((b) => b[0] ?? "");
    await until("the first answer", () => texts(tg, OWNER).includes("removed a"));
    expect(existsSync(a)).toBe(false);
    tg.injectMessage({ chat: OWNER, from: OWNER, text: "clean b" });
    await press((b) => b[1] ?? "");
    await until("the second answer", () => texts(tg, OWNER).includes("b stays"));
    expect(existsSync(join(b, "keep.txt"))).toBe(true);
    // Both presses were answered, and each approval message now says what was decided.
    expect(tg.callbackAnswers()).toHaveLength(2);
    const decided = tg
      .sentMessages(OWNER)
      .filter((m) => m.edits.length > 0)
      .map((m) => m.text);
    expect(decided).toHaveLength(2);
  });
});
