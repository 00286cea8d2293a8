// The dashboard end to end in real headless Chromium: a real gateway and a real `tenax dashboard`
// on one profile. The page shows every layer, a session made through the gateway (its transcript,
// found by search, its untrusted text inert), and a red banner within 5 s of the gateway stopping,
// which clears when the gateway is back.
import { beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { writeFailingJob } from "./helpers/cron.js";
import { freePort, loginOf, startDashboard } from "./helpers/dashboard.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";
import { startPrinted } from "./helpers/listening.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

async function chat(gateway: GatewayProcess, content: string): Promise<string> {
  const res = await gateway.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });
  expect(res.status).toBe(200);
  return res.headers.get("x-session-id") ?? "";
}

describe("dashboard in Chromium", () => {
  it("shows layers, sessions, search and transcripts, and the gateway going down and coming back", async () => {
    // The gateway listens on its configured port, so the restarted one is at the same address.
    const port = await freePort();
    const { home, paths } = await simProfile(`port: ${port}`);
    await writeFailingJob(paths, "nightly-report", "rate_limit: the provider refused (429)");
    let gateway = await startGateway(home, []);
    const numbat = await chat(gateway, "tell me about the numbat");
    const hostile = await chat(gateway, `<img src=x onerror="window.__xss = 1"> look`);
    const dashboard = await startDashboard(home);

    const page = await openPage();
    await logInBrowser(page, dashboard.url, loginOf(dashboard));
    await page.goto(dashboard.url);
    for (const layer of [
      "gateway",
      "store",
      "providers",
      "credentials",
      "compression",
      "tools",
      "turns",
      "cron",
      "platforms",
      "scheduler",
    ])
      await page.locator(`.tile[data-layer="${layer}"]`).waitFor();
    // The policy in force (simProfile runs commands freely): said, not hidden.
    await expect
      .poll(() => page.locator('.tile[data-layer="tools"]').textContent())
      .toContain("commands: full (every command runs, dangerous ones too)");
    // The cron jobs, failing one named with the command that shows its runs.
    const cron = page.locator('.tile[data-layer="cron"]');
    await expect.poll(() => cron.getAttribute("data-status")).toBe("degraded");
    await expect.poll(() => cron.textContent()).toContain("nightly-report failed 3 runs in a row");
    await expect.poll(() => cron.textContent()).toContain("tenax cron runs nightly-report");
    const store = page.locator('.tile[data-layer="store"]');
    await expect.poll(() => store.getAttribute("data-status")).toBe("ok");
    await expect.poll(() => store.textContent()).toMatch(/2 sessions, 4 messages/);
    const gatewayTile = page.locator('.tile[data-layer="gateway"]');
    await expect.poll(() => gatewayTile.textContent()).toContain(gateway.url);
    expect(await gatewayTile.getAttribute("data-status")).not.toBe("down");
    expect(await page.locator("#banner").isHidden()).toBe(true);
    await expect.poll(() => page.locator("#credentials tbody").textContent()).toMatch(/sim/);
    // The gateway lists "events" among its capabilities, so the page follows its feed.
    await expect.poll(() => page.locator("#events-note").textContent()).toBe("live");
    await expect.poll(() => page.locator("#events").textContent()).toMatch(/turn_finished \[agent\]/);

    // The session the gateway stored, its transcript, and search over it.
    await page.locator(`#sessions li[data-session="${numbat}"]`).click();
    await expect.poll(() => page.locator("#transcript").textContent()).toMatch(/tell me about the numbat/);
    await expect
      .poll(() => page.locator("#transcript").textContent())
      .toMatch(/echo: tell me about the numbat/);
    await page.locator(`#sessions li[data-session="${hostile}"]`).click();
    await expect.poll(() => page.locator("#transcript").textContent()).toMatch(/<img src=x onerror=/);
    expect(await page.locator("#transcript img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    await page.locator("#search").fill("numbat");
    await page.locator("#search").press("Enter");
    await expect
      .poll(() => page.locator("#sessions-note").textContent())
      .toMatch(/1 session\(s\) match "numbat"/);
    expect(
      await page.locator("#sessions li").evaluateAll((items) => items.map((li) => li.dataset.session)),
    ).toEqual([numbat]);

    // Stop the gateway: the banner says so within 5 s of the signal, with what to run.
    const stoppedAt = Date.now();
    gateway.child.kill("SIGTERM");
    const banner = page.locator("#banner");
    await banner.waitFor({ state: "visible", timeout: 5000 });
    const bannerAfterMs = Date.now() - stoppedAt;
    console.log(`dashboard: red banner ${bannerAfterMs} ms after SIGTERM to the gateway`);
    expect(bannerAfterMs).toBeLessThan(5000);
    // A gateway started by hand and stopped: start it by hand again (`tenax up` would find this
    // dashboard's port taken), or the service. (A probe in flight as the gateway closed its
    // connections may first show ECONNRESET; the next one finds the port closed.)
    await expect
      .poll(() => banner.textContent(), { timeout: 5000 })
      .toMatch(
        /^gateway unreachable since \d\d:\d\d:\d\d — http:\/\/127\.0\.0\.1:\d+ does not answer \(connection refused: nothing listens there\)\. Not running\. tenax gateway run \(or tenax gateway start for the service\)\.$/,
      );
    const printed = (await banner.locator("code").textContent()) ?? "";
    expect(printed).toBe("tenax gateway run");
    const red = await banner.evaluate((node) => {
      // The page's own getComputedStyle (the test's TypeScript has no DOM types).
      const view = globalThis as unknown as { getComputedStyle(n: unknown): { backgroundColor: string } };
      return view.getComputedStyle(node).backgroundColor;
    });
    expect(red).toBe("rgb(207, 34, 46)");
    expect(await gatewayTile.getAttribute("data-status")).toBe("down");
    expect(await gateway.exited).toBe(0);

    // `tenax status` agrees: the gateway layer is down, exit 2.
    const status = await tenaxAsync(home, ["status"]);
    expect(status.stdout).toMatch(/^ {2}gateway\s+down/m);
    expect(status.status).toBe(2);

    // Back again through the banner's command, run by a shell as printed: the banner clears.
    gateway = await startPrinted(home, printed, "gateway");
    const restartedAt = Date.now();
    await banner.waitFor({ state: "hidden", timeout: 5000 });
    console.log(`dashboard: banner cleared ${Date.now() - restartedAt} ms after the gateway listened again`);
    await expect.poll(() => gatewayTile.getAttribute("data-status")).not.toBe("down");
  });
});
