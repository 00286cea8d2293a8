// The dashboard's providers tile in real headless Chromium, over a real gateway whose provider is a
// port nothing listens on: after a turn fails the tile is red (not green), names the provider with
// its last error, and the page's overall state is down; once the provider answers a turn it is ok.
import { writeFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild, testGatewayKey } from "./helpers/cli.js";
import { freePort, loginOf, startDashboard } from "./helpers/dashboard.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import { startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

const sims: Simulator[] = [];
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

describe("the dashboard's providers tile", () => {
  it("is not green while the provider is down, names it with its last error, and turns ok when it answers again", async () => {
    const port = await freePort();
    const paths = profileWith(
      `model: { provider: main, name: echo }\nproviders:\n  main: { type: openai, base_url: "http://127.0.0.1:${port}/v1" }\nretry: { max_attempts: 1 }\ngateway: { api_key: "\${TENAX_API_KEY}", drain_timeout: 1 }\nhealth: { provider_probe: off }\n`,
    );
    // The key every tenax child of this home gets; in .env too, as a first start would write it.
    const key = testGatewayKey(paths.home);
    writeFileSync(paths.env, `TENAX_API_KEY=${key}\n`, { mode: 0o600 });
    const gateway = await startGateway(paths.home);
    const dashboard = await startDashboard(paths.home);
    const turn = (content: string) =>
      fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
      }).then((r) => r.text());

    const page = await openPage();
    await logInBrowser(page, dashboard.url, loginOf(dashboard));
    await page.goto(dashboard.url);
    const tile = page.locator('.tile[data-layer="providers"]');
    await tile.waitFor();
    // Never called, probe off: unknown (grey), which is not green either.
    await expect.poll(() => tile.getAttribute("data-status")).toBe("unknown");

    await turn("this one meets a closed port");
    await expect.poll(() => tile.getAttribute("data-status"), { timeout: 10_000 }).toBe("down");
    const main = tile.locator('.provider[data-provider="main"]');
    expect(await main.getAttribute("data-status")).toBe("down");
    expect(await main.textContent()).toMatch(
      /a call to echo failed \d+ s ago: \S+ \(could not connect to http:\/\/127\.0\.0\.1:\d+\/v1 \(connection refused\)/,
    );
    expect(await main.locator(".last-error").textContent()).toMatch(
      /^last error: \S+ at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \(a call\)$/,
    );
    expect(await tile.locator(".next").first().textContent()).toContain(
      `curl -sS http://127.0.0.1:${port}/v1/models`,
    );
    // Polled: the page redraws its tiles on every event, and a node read while it is replaced has
    // no computed style yet.
    await expect
      .poll(() =>
        tile.evaluate((node) => {
          const view = globalThis as unknown as { getComputedStyle(n: unknown): { borderLeftColor: string } };
          return view.getComputedStyle(node).borderLeftColor;
        }),
      )
      .toBe("rgb(207, 34, 46)");
    await expect.poll(() => page.locator("#overall").textContent()).toBe("down");

    // The provider comes back; the next turn's success makes the tile ok.
    const sim = await startSimulator({ port });
    sims.push(sim);
    expect(await turn("and now it answers")).toContain("echo: and now it answers");
    await expect.poll(() => tile.getAttribute("data-status"), { timeout: 10_000 }).toBe("ok");
    expect(await main.getAttribute("data-status")).toBe("ok");
    await expect.poll(() => page.locator("#overall").textContent()).toBe("ok");
  });
});
