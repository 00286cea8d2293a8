// The Telegram simulator's HTTP app: the Bot API routes (routes/bot-api.ts) and the control API
// (routes/control.ts) on the shared base app, every error in Telegram's shape. It never listens:
// server.ts opens the port.
import type { App } from "../../../http/app.js";
import { createApp } from "../../../http/app.js";
import type { TelegramSimDriver } from "./driver.js";
import { botError, botErrorBody } from "./errors.js";
import { registerBotApiRoutes } from "./routes/bot-api.js";
import { registerControlRoutes } from "./routes/control.js";
import type { SimDeps } from "./routes/deps.js";

/** The largest body read; a text of 4096 characters with markup is far below it. */
export const MAX_BODY_BYTES = 1024 * 1024;

export function buildTelegramSimApp(deps: SimDeps, driver: TelegramSimDriver): App {
  const app = createApp({
    bodyLimit: MAX_BODY_BYTES,
    errorBody: botErrorBody,
    notFound: () => botError(404),
  });
  registerControlRoutes(app, driver);
  registerBotApiRoutes(app, deps);
  return app;
}
