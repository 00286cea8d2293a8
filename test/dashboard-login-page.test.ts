// The login as a person on a phone meets it, in real headless Chromium against a real `tenax
// dashboard`: the bare address is the login page naming the command; the printed link opens the
// dashboard, whose Logins panel marks this device; a login revoked from the command line sends the
// open page to the login page saying why; and "Log this device out" ends the login.
import { beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { startDashboard } from "./helpers/dashboard.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

async function newLink(home: string): Promise<string> {
  const made = await tenaxAsync(home, ["dashboard", "link", "--json"]);
  expect(made.status, made.stderr).toBe(0);
  return (JSON.parse(made.stdout) as { url: string }).url;
}

describe("the dashboard's login in a browser", () => {
  it("login page, link, this device in the Logins panel, revoked elsewhere, logged out", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    const dashboard = await startDashboard(paths.home);
    const page = await openPage({ width: 390, height: 844 });

    await page.goto(dashboard.url);
    await expect.poll(() => page.locator("body.login").textContent()).toContain("tenax dashboard link");

    await page.goto(await newLink(paths.home));
    await page.locator('.tile[data-layer="store"]').waitFor();
    expect(new URL(page.url()).pathname).toBe("/");
    const panel = page.locator("#logins-panel");
    await expect.poll(() => panel.isVisible(), { timeout: 15_000 }).toBe(true);
    // The helper's login (from the printed link) and this one.
    await expect.poll(() => panel.locator("tbody tr").count()).toBe(2);
    expect(await panel.locator("tbody").textContent()).toContain("(this device)");

    // Revoked from the command line: the open page goes to the login page, which says why.
    const listed = JSON.parse((await tenaxAsync(paths.home, ["dashboard", "logins", "--json"])).stdout) as {
      logins: Array<{ login_id: string; made_by: string }>;
    };
    const mine = listed.logins.find((l) => l.made_by.startsWith("tenax dashboard link"));
    expect(mine).toBeDefined();
    const revoked = await tenaxAsync(paths.home, ["dashboard", "logins", "revoke", mine?.login_id ?? ""]);
    expect(revoked.status, revoked.stderr).toBe(0);
    await expect
      .poll(
        () =>
          page
            .locator("body.login")
            .textContent()
            .catch(() => ""),
        { timeout: 15_000 },
      )
      .toMatch(/was revoked .* by the operator/);

    // A new link, then "Log this device out": the login page, and the login is gone.
    await page.goto(await newLink(paths.home));
    await expect.poll(() => panel.isVisible(), { timeout: 15_000 }).toBe(true);
    await page.getByRole("button", { name: "Log this device out" }).click();
    await page.locator("body.login").waitFor();
    expect(new URL(page.url()).pathname).toBe("/auth/login");
    const after = JSON.parse((await tenaxAsync(paths.home, ["dashboard", "logins", "--json"])).stdout) as {
      logins: unknown[];
    };
    expect(after.logins).toHaveLength(1);
  });
});
