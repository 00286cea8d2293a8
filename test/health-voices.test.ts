// Health has one voice: a real gateway process is brought into ok, degraded and down, and at each
// state `tenax status --json`, the gateway's `/health`, the dashboard's `/api/layers` and the
// dashboard page in Chromium name the same components with the same state, and the same overall
// state (status's exit code with it). With the gateway stopped, status and the dashboard still agree.
// And after a restart, a run that fell due while the gateway was down is a missed run: every voice
// says cron is ok, none reads the downtime as the scheduler's lag.
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { writeFailingJob } from "./helpers/cron.js";
import { type DashboardProcess, freePort, loginOf, startDashboard } from "./helpers/dashboard.js";
import { logInBrowser } from "./helpers/dashboard-login.js";
import { type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

type Levels = Record<string, string>;
type Report = { status: string; components: Record<string, { status: string }> };

/** Overall and per-component states of a report shaped as the model's ({status, components}). */
function levels(report: Report): Levels {
  return {
    overall: report.status,
    ...Object.fromEntries(Object.entries(report.components).map(([name, c]) => [name, c.status])),
  };
}

interface Voices {
  status: Levels;
  exit: number | null;
  health: Levels | null;
  dashboard: Levels;
  page: Levels;
}

async function listen(home: string, gateway: GatewayProcess | null, dashboard: DashboardProcess, page: Page) {
  const run = await tenaxAsync(home, ["status", "--json"]);
  const health = gateway === null ? null : levels((await (await gateway.fetch("/health")).json()) as Report);
  const layers = (await (await dashboard.fetch("/api/layers")).json()) as { report: Report };
  const tiles = await page
    .locator(".tile[data-layer]")
    .evaluateAll((nodes) => nodes.map((n) => [n.dataset.layer ?? "", n.dataset.status ?? ""]));
  const overall = (await page.locator("#overall").textContent()) ?? "";
  const voices: Voices = {
    status: levels(JSON.parse(run.stdout) as Report),
    exit: run.status,
    health,
    dashboard: levels(layers.report),
    page: { overall, ...Object.fromEntries(tiles) },
  };
  return voices;
}

/**
 * Waits until every voice says the same of every component (each samples at its own moment, and
 * the dashboard looks every second), then checks the states `expected` names and the exit code.
 */
async function agree(
  home: string,
  gateway: GatewayProcess | null,
  dashboard: DashboardProcess,
  page: Page,
  expected: Levels,
): Promise<Voices> {
  let last: Voices | null = null;
  const same = (v: Voices) =>
    [v.health, v.dashboard, v.page].every((other) => other === null || sameLevels(v.status, other)) &&
    Object.entries(expected).every(([name, level]) => v.status[name] === level);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    last = await listen(home, gateway, dashboard, page);
    if (same(last)) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  const voices = last as Voices;
  // The assertions that name what disagreed, when it never settled.
  if (voices.health !== null) expect(voices.health).toEqual(voices.status);
  expect(voices.dashboard).toEqual(voices.status);
  expect(voices.page).toEqual(voices.status);
  expect(voices.status).toMatchObject(expected);
  expect(voices.exit).toBe(voices.status.overall === "ok" ? 0 : voices.status.overall === "degraded" ? 1 : 2);
  return voices;
}

function sameLevels(a: Levels, b: Levels): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

const turn = (gateway: GatewayProcess, content: string) =>
  gateway
    .fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
    })
    .then(async (r) => ({ status: r.status, body: await r.text() }));

describe("health has one voice", () => {
  it("status, /health, the dashboard's API and its page agree on every component: ok, degraded, down, and with the gateway stopped", async () => {
    const port = await freePort();
    const { sim, home, paths } = await simProfile(
      `port: ${port}, drain_timeout: 1`,
      "tools: { exec: { mode: full } }\nretry: { max_attempts: 1 }\nagent: { stall_after: 1, turn_deadline: 600 }\n",
    );
    const gateway = await startGateway(home, []);
    const dashboard = await startDashboard(home);
    const page = await openPage();
    await logInBrowser(page, dashboard.url, loginOf(dashboard));
    await page.goto(dashboard.url);
    await page.locator('.tile[data-layer="scheduler"]').waitFor();

    // ok: a provider that answers, no jobs, nothing waiting.
    expect((await turn(gateway, "hello")).status).toBe(200);
    const ok = await agree(home, gateway, dashboard, page, {
      gateway: "ok",
      store: "ok",
      providers: "ok",
      credentials: "ok",
      cron: "ok",
      platforms: "ok",
    });
    expect(Object.keys(ok.status)).toEqual([
      "overall",
      "gateway",
      "store",
      "providers",
      "credentials",
      "compression",
      "scheduler",
      "tools",
      "turns",
      "instances",
      "cron",
      "platforms",
      "mcp",
      "disk",
    ]);
    // The instances panel: on SQLite, this gateway as the one instance of the profile, with no
    // turn running (the page refreshes every second: a sample taken during "hello" said 1).
    const instanceRows = page.locator("#instances tbody tr");
    await expect.poll(() => instanceRows.count()).toBe(1);
    await expect
      .poll(() => instanceRows.first().textContent(), { timeout: 10_000 })
      .toMatch(
        new RegExp(
          `^pid:${gateway.child.pid} \\(this gateway\\).* pid ${gateway.child.pid} · since .+alive0$`,
        ),
      );
    expect(await page.locator("#instances-note").textContent()).toMatch(
      /^one instance \(SQLite: one gateway per profile\): /,
    );

    // degraded: a turn stalled on a provider gone silent mid-reply, named by every voice; ended
    // from outside by `tenax sessions stop`, after which every voice says turns ok again.
    sim.script([{ type: "hang", phase: "mid_stream", after_chunks: 1 }]);
    const stalled = turn(gateway, "take your time");
    await agree(home, gateway, dashboard, page, { overall: "degraded", turns: "degraded" });
    const named = (await (await gateway.fetch("/health")).json()) as {
      components: { turns: { stalled: { session_id: string }[] } };
    };
    const session = named.components.turns.stalled[0]?.session_id ?? "";
    expect(await page.locator('.tile[data-layer="turns"]').textContent()).toContain(
      `tenax sessions stop ${session}`,
    );
    const stop = await tenaxAsync(home, ["sessions", "stop", session]);
    expect(stop.status, stop.stderr).toBe(0);
    expect((await stalled).status).toBe(409);
    await agree(home, gateway, dashboard, page, { overall: "ok", turns: "ok" });

    // degraded: a cron job whose runs keep failing.
    await writeFailingJob(paths, "nightly-report", "rate_limit: the provider refused (429)");
    await agree(home, gateway, dashboard, page, { overall: "degraded", gateway: "ok", cron: "degraded" });

    // down: the only provider is gone and a turn failed on it.
    await sim.close();
    expect((await turn(gateway, "and now?")).status).toBeGreaterThanOrEqual(500);
    await agree(home, gateway, dashboard, page, {
      overall: "down",
      gateway: "ok",
      providers: "down",
      cron: "degraded",
    });

    // The gateway stopped: no /health to ask; status and the dashboard tell the same from outside.
    gateway.child.kill("SIGTERM");
    expect(await gateway.exited).toBe(0);
    await agree(home, null, dashboard, page, {
      overall: "down",
      gateway: "down",
      scheduler: "down",
      providers: "down",
      cron: "degraded",
    });
    await expect
      .poll(() => page.locator("#instances-note").textContent())
      .toBe("one gateway per profile on SQLite, and none runs now");
    expect(await instanceRows.count()).toBe(0);
  }, 240_000);

  it("after a restart, a run that fell due while the gateway was down is missed, not lag: every voice says cron ok", async () => {
    const port = await freePort();
    const { home } = await simProfile(`port: ${port}, drain_timeout: 1`);
    let gateway = await startGateway(home, []);
    const dashboard = await startDashboard(home);
    gateway.child.kill("SIGTERM");
    expect(await gateway.exited).toBe(0);

    // Due 1 s from now (it was parsed before this), while no gateway runs; the gateway starts
    // again a second after that.
    const added = await tenaxAsync(home, [
      "cron",
      "add",
      "soon",
      "--schedule",
      "in 1s",
      "--prompt",
      "report",
    ]);
    expect(added.status).toBe(0);
    const due = Date.now() + 1_000;
    await until(() => Date.now() > due + 1_000, 10_000);
    gateway = await startGateway(home, []);

    // The run happened, as the one catch-up of a missed occurrence: awaited through the gateway's
    // API (a CLI start per look is seconds on a loaded machine), then told by `tenax cron runs`.
    type Run = { state: string; missed: boolean; trigger: string };
    const live = gateway;
    await until(async () => {
      const listed = (await (await live.fetch("/api/jobs/soon/runs")).json()) as { data: Run[] };
      return listed.data.some((r) => r.state === "ok");
    }, 30_000);
    const shown = await tenaxAsync(home, ["cron", "runs", "soon", "--json"]);
    const runs = (JSON.parse(shown.stdout) as { runs: Run[] }).runs;
    expect(runs.map((r) => [r.state, r.missed, r.trigger])).toEqual([["ok", true, "catch_up"]]);

    const health = (await (await gateway.fetch("/health")).json()) as {
      components: { cron: { status: string; detail: string; lag_ms: { samples: number } } };
    };
    expect(health.components.cron.status).toBe("ok");
    expect(health.components.cron.lag_ms.samples).toBe(0);
    expect(health.components.cron.detail).not.toMatch(/late/);
    const page = await openPage();
    await logInBrowser(page, dashboard.url, loginOf(dashboard));
    await page.goto(dashboard.url);
    await page.locator('.tile[data-layer="cron"]').waitFor();
    const voices = await agree(home, gateway, dashboard, page, { gateway: "ok", cron: "ok" });
    expect(voices.status.cron).toBe("ok");
  }, 120_000);
});
