// A profile whose gateway polls the Telegram simulator (both on 127.0.0.1, in the test process)
// and whose model is the LLM simulator; both are closed after each test that makes one.
import { afterEach } from "vitest";
import { startSimulator } from "../../src/llm/simulator/server.js";
import { startTelegramSim } from "../../src/platforms/telegram/sim/server.js";
import { profileWith } from "./temp-home.js";

export const TG_TOKEN = "123456789:AAHtest-token-for-the-status-tests";
export const TG_OWNER = 42;

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** `gateway` is the gateway section's YAML inside its braces (a port, say). */
export async function telegramProfile(gateway = "drain_timeout: 2") {
  const sim = await startSimulator();
  const tg = await startTelegramSim({ token: TG_TOKEN, chats: [{ id: TG_OWNER }] });
  open.push(sim, tg);
  const paths = profileWith(
    [
      "model: { provider: sim, name: echo }",
      `providers:\n  sim: { type: simulator, base_url: "${sim.url}" }`,
      "tools: { exec: { mode: full } }",
      `gateway: { ${gateway} }`,
      `platforms:\n  telegram: { token: "${TG_TOKEN}", api_root: "${tg.apiRoot}", allowed_users: [${TG_OWNER}], poll_timeout: 1 }`,
      "",
    ].join("\n"),
  );
  return { sim, tg, paths, home: paths.home };
}
