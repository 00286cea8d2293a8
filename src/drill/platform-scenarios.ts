// The chat platforms layer: the Bot API down for a while (502 for the first half, connections
// refused for the second) under a real gateway that answers a Telegram user through the Telegram
// simulator. The answer written while it is down fails and waits in the durable outbox (the
// feed's platform_delivery_failed, layer platforms, is what caught it), the messages sent
// meanwhile wait in the simulator's pending updates as they would at Telegram, and /health says
// not connected; after the lift every message is answered exactly once, in order.
import { startTelegramSim, type TelegramSim } from "../platforms/telegram/sim/server.js";
import { scenarioGateway } from "./gateway-child.js";
import { type FeedEvent, followFeed, type GatewayEndpoint, health } from "./gateway-client.js";
import { judgeOutage, type PlatformSnapshot } from "./platform-verdict.js";
import type { Scenario, ScenarioContext } from "./runner.js";
import { scratchProfile } from "./scratch.js";

/** The outage's length unless told; TENAX_DRILL_TELEGRAM_OUTAGE_MS=60000 gives the full minute. */
export const DEFAULT_TELEGRAM_OUTAGE_MS = 20_000;
export const TELEGRAM_OUTAGE_VARIABLE = "TENAX_DRILL_TELEGRAM_OUTAGE_MS";
/**
 * Past the outage: the poller's and the outbox's backoff (up to 60 s and 72 s steps by then)
 * before each tries again, the gateway's start and the settling time.
 */
const AFTER_OUTAGE_MS = 100_000;
/** After the last answer: time for a duplicate (which must not come) to show. */
const SETTLE_MS = 1_500;

const TOKEN = "123456789:AAHdrill-token-for-the-chaos-drill";
const USER = 4242;

/** The outage length from the environment, or the default; a bad value is an error that says so. */
export function telegramOutageMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[TELEGRAM_OUTAGE_VARIABLE];
  if (raw === undefined || raw === "") return DEFAULT_TELEGRAM_OUTAGE_MS;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 2_000 || ms > 600_000)
    throw new Error(
      `${TELEGRAM_OUTAGE_VARIABLE}=${raw} is not a whole number of milliseconds from 2000 to 600000; unset it for ${DEFAULT_TELEGRAM_OUTAGE_MS} or set e.g. ${TELEGRAM_OUTAGE_VARIABLE}=60000`,
    );
  return ms;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** Poll `check` until it gives a value or `ms` pass; null then. */
async function within<T>(ms: number, signal: AbortSignal, check: () => Promise<T | null> | T | null) {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() >= end) return null;
    await sleep(100, signal);
  }
}

async function telegramHealth(gateway: GatewayEndpoint, signal: AbortSignal): Promise<PlatformSnapshot> {
  const component = (await health(gateway, signal)).components.platforms as
    | { status: string; platforms?: { platform: string; connected: boolean | null; pending: number }[] }
    | undefined;
  const row = component?.platforms?.find((p) => p.platform === "telegram");
  return {
    status: component?.status ?? "missing",
    connected: row?.connected ?? null,
    pending: row?.pending ?? 0,
  };
}

const texts = (tg: TelegramSim) => tg.sentMessages(USER).map((m) => m.text);

export interface OutageOptions {
  /** A fault added as the outage lifts (a check that the row can fail: an answer made impossible). */
  atLift?: (tg: TelegramSim) => void;
}

async function runOutage(context: ScenarioContext, outageMs: number, options: OutageOptions) {
  const { signal } = context;
  const tg = await startTelegramSim({ token: TOKEN, chats: [{ id: USER }] });
  context.defer(() => tg.close());
  const { sim } = await scratchProfile(context, {
    platforms: {
      telegram: { token: TOKEN, api_root: tg.apiRoot, allowed_users: [USER], poll_timeout: 1 },
    },
  });
  const gateway = await scenarioGateway(context);
  const failures: FeedEvent[] = [];
  const feed = followFeed(gateway, signal, (event) => {
    if (event.type !== "platform_delivery_failed" || event.layer === undefined) return;
    failures.push(event);
    context.caught(event.layer);
  });
  const say = (text: string) => tg.injectMessage({ chat: USER, from: USER, text });

  // The baseline: the bot answers.
  say("hello before the outage");
  const baseline = await within(15_000, signal, () => (texts(tg).length >= 1 ? true : null));
  if (baseline === null)
    return {
      ok: false,
      detail: `the baseline message was not answered; the chat holds ${JSON.stringify(texts(tg))}`,
    };

  // A message whose answer streams slowly, so that it is written while the Bot API is down.
  const inFlight = "first, answered while the Bot API is down";
  sim.script([{ type: "reply", text: `echo: ${inFlight}`, chunk_size: 4, chunk_delay_ms: 100 }]);
  say(inFlight);
  await within(15_000, signal, () => (sim.requests().length >= 2 ? true : null));
  tg.startOutage({ mode: "error", status: 502 });
  context.injected();
  const outageStart = Date.now();
  const during = ["second, sent while Telegram answers 502", "third, sent while connections are refused"];
  let healthDuring: PlatformSnapshot | null = null;
  let queuedAtTelegram = 0;
  const watchHealth = async (untilMs: number) => {
    while (Date.now() < untilMs) {
      const now = await telegramHealth(gateway, signal);
      if (healthDuring === null && now.status !== "ok" && now.connected === false && now.pending >= 1)
        healthDuring = now;
      queuedAtTelegram = Math.max(queuedAtTelegram, tg.pendingUpdates());
      await sleep(200, signal);
    }
  };
  // A long poll held from before the outage would still bring a message in: the user's messages
  // go once a poll has failed, so that they wait at Telegram as they would in a real outage.
  await within(outageMs / 2, signal, () =>
    tg.calls("getUpdates").some((c) => c.at >= outageStart && c.fault === "outage") ? true : null,
  );
  say(during[0] ?? "");
  await watchHealth(outageStart + outageMs / 2);
  tg.startOutage({ mode: "refuse" });
  say(during[1] ?? "");
  await watchHealth(outageStart + outageMs);
  options.atLift?.(tg);
  await tg.liftOutage();
  const lifted = Date.now();

  const expected = ["hello before the outage", inFlight, ...during].map((t) => `echo: ${t}`);
  const givenUp = () => feed.events().filter((e) => e.type === "platform_delivery_given_up").length;
  // Every answer delivered (when), or one given up and nothing left to come (no need to wait on).
  const end = await within(AFTER_OUTAGE_MS - 10_000, signal, async () => {
    if (texts(tg).length >= expected.length) return { drained: Date.now() };
    if (givenUp() === 0 || sim.requests().length < expected.length || tg.pendingUpdates() > 0) return null;
    return (await telegramHealth(gateway, signal)).pending === 0 ? { drained: null } : null;
  });
  const drained = end?.drained ?? null;
  await sleep(SETTLE_MS, signal);
  const healthAfter = await within(5_000, signal, async () => {
    const now = await telegramHealth(gateway, signal);
    return now.status === "ok" && now.pending === 0 && now.connected === true ? now : null;
  });
  return judgeOutage({
    outage_ms: outageMs,
    expected,
    answers: texts(tg),
    sent_during: during.length,
    queued_at_telegram: queuedAtTelegram,
    model_calls: sim.requests().length,
    failures_on_feed: failures.length,
    given_up_on_feed: givenUp(),
    health_during: healthDuring,
    health_after: healthAfter ?? (await telegramHealth(gateway, signal)),
    drain_ms: drained === null ? null : drained - lifted,
  });
}

/** The row, with the outage's length (the environment's or the default unless given). */
export function telegramOutageScenario(outageMs = telegramOutageMs(), options: OutageOptions = {}): Scenario {
  return {
    fault: `the Telegram Bot API down for ${Math.round(outageMs / 1000)} s`,
    expected_layer: "platforms",
    deadline_ms: outageMs + AFTER_OUTAGE_MS,
    run: (context) => runOutage(context, outageMs, options),
  };
}

/** A bad TENAX_DRILL_TELEGRAM_OUTAGE_MS fails the row with what to set, not the whole drill. */
function fromEnvironment(): Scenario {
  try {
    return telegramOutageScenario(telegramOutageMs());
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return {
      fault: "the Telegram Bot API down",
      expected_layer: "platforms",
      run: async () => ({ ok: false, detail }),
    };
  }
}

export const platformScenarios: readonly Scenario[] = [fromEnvironment()];
