// Scripted faults through the real grammY client: a 429 whose retry_after grammY reads, 502s then
// success, a hang released, a cut connection, an outage until lifted, and close() ending what hangs.
import { Bot, GrammyError, HttpError } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTelegramSim, type TelegramSim } from "./server.js";

let sim: TelegramSim;
let bot: Bot;

beforeEach(async () => {
  sim = await startTelegramSim({ chats: [{ id: 5 }] });
  bot = new Bot(sim.token, { client: { apiRoot: sim.apiRoot } });
});

afterEach(async () => {
  await sim.close();
});

/** Wait until the simulator has received a call of `method` (answered or not). */
async function received(method: string): Promise<void> {
  for (let i = 0; i < 200 && sim.calls(method).length === 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  expect(sim.calls(method).length).toBeGreaterThan(0);
}

async function failure(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    () => {
      throw new Error("the call succeeded; a failure was expected");
    },
    (e: unknown) => e,
  );
}

describe("Telegram simulator: faults", () => {
  it("answers a 429 with retry_after, which grammY's error carries as parameters.retry_after", async () => {
    sim.fault({ type: "rate_limit", method: "sendMessage", retry_after: 7 });
    const error = (await failure(bot.api.sendMessage(5, "hi"))) as GrammyError;
    expect(error).toBeInstanceOf(GrammyError);
    expect(error.error_code).toBe(429);
    expect(error.description).toBe("Too Many Requests: retry after 7");
    expect(error.parameters.retry_after).toBe(7);
    const [call] = sim.calls("sendMessage");
    expect(call).toMatchObject({ status: 429, fault: "rate_limit", params: { chat_id: 5, text: "hi" } });
    // The fault is spent: the next call goes through, and nothing was sent before.
    expect((await bot.api.sendMessage(5, "hi")).text).toBe("hi");
    expect(sim.sentMessages(5)).toHaveLength(1);
  });

  it("answers 502 twice, then the call succeeds; faults for other methods wait their turn", async () => {
    sim.fault([
      { type: "error", method: "sendMessage", status: 502, times: 2 },
      { type: "error", method: "getMe", status: 503 },
    ]);
    expect(sim.faultsQueued()).toBe(3);
    for (let i = 0; i < 2; i++) {
      const error = (await failure(bot.api.sendMessage(5, "x"))) as GrammyError;
      expect([error.error_code, error.description]).toEqual([502, "Bad Gateway"]);
    }
    expect((await bot.api.sendMessage(5, "x")).message_id).toBe(1);
    const me = (await failure(bot.api.getMe())) as GrammyError;
    expect(me.error_code).toBe(503);
    expect(sim.faultsQueued()).toBe(0);
    // The HTTP status is the error_code.
    sim.fault({ type: "error", status: 500, description: "Internal Server Error: restart" });
    const answer = await fetch(`${sim.apiRoot}/bot${sim.token}/getMe`);
    expect(answer.status).toBe(500);
    expect(await answer.json()).toEqual({
      ok: false,
      error_code: 500,
      description: "Internal Server Error: restart",
    });
  });

  it("answers a raw (non-JSON) error body when told, as a proxy in front of Telegram would", async () => {
    sim.fault({ type: "error", method: "getMe", status: 502, raw: "<html>Bad Gateway</html>" });
    const answer = await fetch(`${sim.apiRoot}/bot${sim.token}/getMe`);
    expect([answer.status, answer.headers.get("content-type"), await answer.text()]).toEqual([
      502,
      "text/html",
      "<html>Bad Gateway</html>",
    ]);
    sim.fault({ type: "error", method: "getMe", status: 502, raw: "<html>Bad Gateway</html>" });
    // grammY cannot read it as JSON: a network-level HttpError, not a GrammyError.
    const error = await failure(bot.api.getMe());
    expect(error).toBeInstanceOf(HttpError);
  });

  it("holds a hanging call until released, then answers it as usual", async () => {
    sim.fault({ type: "hang", method: "sendMessage" });
    let settled = false;
    const call = bot.api.sendMessage(5, "slow").finally(() => {
      settled = true;
    });
    await received("sendMessage");
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(settled).toBe(false);
    expect(sim.calls("sendMessage")).toMatchObject([{ ended: "open", status: null }]);
    expect(sim.releaseHangs()).toBe(1);
    expect((await call).text).toBe("slow");
    expect(sim.calls("sendMessage")).toMatchObject([{ ended: "answered", status: 200, fault: "hang" }]);
  });

  it("cuts the connection of a dropped call: grammY sees a network error, not an answer", async () => {
    sim.fault({ type: "drop", method: "getMe" });
    const error = await failure(bot.api.getMe());
    expect(error).toBeInstanceOf(HttpError);
    expect(sim.calls("getMe")).toMatchObject([{ ended: "dropped", status: null }]);
    expect((await bot.api.getMe()).is_bot).toBe(true);
  });

  it("fails every call during an outage, and none after it is lifted", async () => {
    sim.startOutage({ mode: "error", status: 503 });
    for (const call of [bot.api.getMe(), bot.api.sendMessage(5, "x")]) {
      const error = (await failure(call)) as GrammyError;
      expect(error.error_code).toBe(503);
    }
    sim.startOutage({ mode: "drop" });
    expect(await failure(bot.api.getMe())).toBeInstanceOf(HttpError);
    sim.liftOutage();
    expect((await bot.api.getMe()).is_bot).toBe(true);
    expect(sim.calls().map((c) => c.fault)).toEqual(["outage", "outage", "outage", null]);
  });

  it("refuses connections during a refuse outage, and listens on the same port once lifted", async () => {
    sim.startOutage({ mode: "refuse" });
    const error = (await failure(bot.api.getMe())) as HttpError;
    expect(error).toBeInstanceOf(HttpError);
    expect((error.error as { code?: string }).code).toBe("ECONNREFUSED");
    await sim.liftOutage();
    expect((await bot.api.getMe()).is_bot).toBe(true);
    // Over HTTP it needs for_ms, since nothing could lift it otherwise; with it, it lifts itself.
    const control = (body: unknown) =>
      fetch(`${sim.controlUrl}/outage`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    expect((await control({ mode: "refuse" })).status).toBe(400);
    expect((await control({ mode: "refuse", for_ms: 300 })).status).toBe(200);
    expect(await failure(bot.api.getMe())).toBeInstanceOf(HttpError);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await bot.api.getMe()).is_bot).toBe(true);
    // close() during a refuse outage still ends cleanly.
    sim.startOutage({ mode: "refuse" });
  });

  it("refuses a fault it cannot read, naming the field", () => {
    expect(() => sim.fault({ type: "rate_limit", method: "sendMessage" } as never)).toThrow(
      /invalid Telegram simulator fault: .*retry_after/,
    );
    expect(() => sim.fault({ type: "explode" } as never)).toThrow(/invalid Telegram simulator fault/);
  });

  it("ends held long polls with no updates and cuts hanging calls on close()", async () => {
    sim.fault({ type: "hang", method: "getMe" });
    const poll = fetch(`${sim.apiRoot}/bot${sim.token}/getUpdates?timeout=30`).then((r) => r.json());
    const hanging = fetch(`${sim.apiRoot}/bot${sim.token}/getMe`).then(
      () => "answered",
      () => "cut",
    );
    await sim.waitForPoll();
    await received("getMe");
    const started = Date.now();
    await sim.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await poll).toEqual({ ok: true, result: [] });
    expect(await hanging).toBe("cut");
    expect(sim.calls("getMe")).toMatchObject([{ ended: "server_closed" }]);
  });
});
