// What the route files are given: the simulator's state and the parts that act on it.
import type { Clock } from "../../../../core/deps.js";
import type { Exchanges } from "../exchanges.js";
import type { LongPolls } from "../polling.js";
import type { TelegramSimState } from "../state.js";
import type { WebhookPusher } from "../webhook.js";

export interface SimDeps {
  token: string;
  state: TelegramSimState;
  polls: LongPolls;
  pusher: WebhookPusher;
  exchanges: Exchanges;
  clock: Clock;
}
