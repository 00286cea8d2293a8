// The Telegram simulator as a running server: its app on a port of its own (127.0.0.1 and a free
// port unless told), and the handle a test or the drill drives it with. grammY talks to it with
// `new Bot(sim.token, { client: { apiRoot: sim.apiRoot } })`.
import { systemClock } from "../../../core/deps.js";
import { closeApp, listen, urlHost } from "../../../http/listen.js";
import { buildTelegramSimApp } from "./app.js";
import { TelegramSimDriver } from "./driver.js";
import { Exchanges } from "./exchanges.js";
import type { FaultInput } from "./faults.js";
import { Listener } from "./listener.js";
import { LongPolls } from "./polling.js";
import { CONTROL_PREFIX } from "./routes/control.js";
import { TelegramSimState } from "./state.js";
import type { TelegramSim, TelegramSimOptions } from "./types.js";
import { DEFAULT_WEBHOOK_BACKOFF, WebhookPusher } from "./webhook.js";
import type { WireUser } from "./wire.js";

export type { Fault, FaultInput, Outage, OutageInput } from "./faults.js";
export { TelegramSimFaultError } from "./faults.js";
export { TelegramSimInputError } from "./inject.js";
export { type ParseMode, parseMarkup } from "./markup.js";
export type * from "./types.js";
export type * from "./wire.js";

export const DEFAULT_SIM_TOKEN = "123456789:TEST-token";

export async function startTelegramSim(options: TelegramSimOptions = {}): Promise<TelegramSim> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token ?? DEFAULT_SIM_TOKEN;
  const clock = options.clock ?? systemClock;
  const botUser = botUserOf(token, options.bot);
  const state = new TelegramSimState(botUser, clock, options.chats);
  const polls = new LongPolls(state);
  const pusher = new WebhookPusher(state, { ...DEFAULT_WEBHOOK_BACKOFF, ...options.webhookBackoff });
  const exchanges = new Exchanges();
  const driver = new TelegramSimDriver(state, exchanges, pusher);
  const app = buildTelegramSimApp({ token, state, polls, pusher, exchanges, clock }, driver);
  const port = await listen(app, host, options.port ?? 0, {
    name: "telegram_sim",
    hint: "stop what uses it, or let the simulator choose a free port (port 0)",
  });
  const listener = new Listener(app.server, host, port);
  driver.listener = listener;
  const apiRoot = `http://${urlHost(host)}:${port}`;
  let closing: Promise<void> | null = null;
  return {
    apiRoot,
    controlUrl: `${apiRoot}${CONTROL_PREFIX}`,
    port,
    token,
    botUser,
    registerChat: (chat) => driver.registerChat(chat),
    injectMessage: (input) => driver.injectMessage(input),
    pressButton: (input) => driver.pressButton(input),
    fault: (faults: FaultInput | FaultInput[]) => driver.fault(faults),
    startOutage: (outage) => driver.startOutage(outage),
    liftOutage: () => driver.liftOutage(),
    releaseHangs: () => driver.releaseHangs(),
    faultsQueued: () => driver.faultsQueued(),
    calls: (method) => driver.calls(method),
    sentMessages: (chatId) => driver.sentMessages(chatId),
    chatActions: (chatId) => driver.chatActions(chatId),
    callbackAnswers: () => driver.callbackAnswers(),
    pendingUpdates: () => driver.pendingUpdates(),
    waitForMessages: (chatId, count, wait) => driver.waitForMessages(chatId, count, wait),
    waitForPoll: (wait) => driver.waitForPoll(wait),
    waitForCalls: (method, count, wait) => driver.waitForCalls(method, count, wait),
    reset: () => driver.reset(),
    close() {
      closing ??= (async () => {
        // Held polls are answered with no updates and given a moment to be written; what still
        // hangs after that is cut.
        listener.stop();
        polls.close();
        await exchanges.idle(200);
        exchanges.cutOpen();
        await pusher.stop();
        await closeApp(app);
      })();
      return closing;
    },
  };
}

function botUserOf(token: string, bot: TelegramSimOptions["bot"]): WireUser {
  const id = Number(token.split(":")[0]);
  return {
    id: Number.isSafeInteger(id) && id > 0 ? id : 123456789,
    is_bot: true,
    first_name: bot?.first_name ?? "Tenax Test Bot",
    username: bot?.username ?? "tenax_test_bot",
  };
}
