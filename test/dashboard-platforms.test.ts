// The dashboard's platforms tile in real headless Chromium, with a real gateway polling the
// Telegram simulator and a real `tenax dashboard` on the same profile: ok while connected, degraded
// with the poll's error and what to do while Telegram has an outage, ok again once it is lifted,
// and down naming tenax up once the gateway is stopped.
import { beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild } from "./helpers/cli.js";
import { freePort, loginOf, startDashboard } from "./helpers/dashboard.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import { startGateway } from "./helpers/gateway.js";
import { TG_OWNER, telegramProfile } from "./helpers/telegram-gateway.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

describe("the dashboard's platforms tile", () => {
  it("shows telegram connected, then degraded with its last error during an outage, then ok again; down naming tenax up with the gateway stopped", async () => {
    const port = await freePort();
    const { tg, home } = await telegramProfile(`drain_timeout: 2, port: ${port}`);
    const gateway = await startGateway(home, []);
    tg.injectMessage({ chat: TG_OWNER, from: TG_OWNER, text: "hello" });
    await tg.waitForMessages(TG_OWNER, 1, { timeoutMs: 20_000 });
    const dashboard = await startDashboard(home);
    const page = await openPage();
    await logInBrowser(page, dashboard.url, loginOf(dashboard));
    await page.goto(dashboard.url);
    const tile = page.locator('.tile[data-layer="platforms"]');
    await tile.waitFor();
    await expect.poll(() => tile.getAttribute("data-status"), { timeout: 15_000 }).toBe("ok");
    await expect.poll(() => tile.textContent()).toMatch(/telegram: connected \(polling\), last update/);

    tg.startOutage({ mode: "error", status: 502 });
    await expect.poll(() => tile.getAttribute("data-status"), { timeout: 15_000 }).toBe("degraded");
    await expect
      .poll(() => tile.locator(".detail").textContent())
      .toBe("telegram: not connected: polling: Telegram getUpdates: 502 Bad Gateway");
    await expect.poll(() => tile.textContent()).toContain("platforms.telegram in config.yaml");

    await tg.liftOutage();
    await expect.poll(() => tile.getAttribute("data-status"), { timeout: 15_000 }).toBe("ok");

    // The gateway stopped: nothing connects the platform, and the tile says what starts it.
    gateway.child.kill("SIGTERM");
    expect(await gateway.exited).toBe(0);
    await expect.poll(() => tile.getAttribute("data-status"), { timeout: 15_000 }).toBe("down");
    expect(await tile.locator(".detail").textContent()).toBe("telegram: not connected, as no gateway runs");
    expect(await tile.locator(".next").textContent()).toMatch(/^next: tenax up starts the gateway/);
  });
});
