// `tenax up` (what `npm start` runs): the gateway and the dashboard as two supervised children. The
// dashboard keeps serving when the gateway is killed and says it is restarting; the gateway comes
// back on the same port; a crash loop makes up give up and say so in its output, on the dashboard
// (in Chromium) and in `tenax status`, and `tenax up` as printed starts it again; SIGTERM stops
// everything cleanly; a killed up leaves no child behind; doctor takes both ports for the profile's own;
// a bad config keeps the dashboard up to show it, and its fix starts the gateway.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import Database from "better-sqlite3";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { dashboardPidFile } from "../src/profile/dashboard-pid.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { readUpState, type UpState, upStateFile } from "../src/profile/up-state.js";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild, runPrintedAsync, tenaxAsync } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { type DashboardLogin, loginLinkIn, redeemLink } from "./helpers/dashboard-login.js";
import { simProfile, startGateway, until } from "./helpers/gateway.js";
import {
  keyedFetch,
  type ListeningProcess,
  type RunningProcess,
  startListening,
  startRunning,
} from "./helpers/listening.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

// The profiles name the key's variable themselves; every child gets its home's test key in it.
const KEYED = `api_key: "\${TENAX_API_KEY}"`;

const UP_ARGS = ["--gateway-port", "0", "--dashboard-port", "0"];

interface GatewayApi {
  url: string;
  reachable: boolean | null;
  supervisor: UpState | null;
  advice: { manager: string; situation: string; next: string; command: string } | null;
}

/** The dashboard tenax up started, logged in to with the link it printed in up's output. */
interface UpDashboard {
  url: string;
  login: DashboardLogin;
  /** fetch(url + path) with the login's access token. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
}

async function dashboardOf(up: { stdout(): string }): Promise<UpDashboard> {
  await until(() => loginLinkIn(up.stdout()) !== null, 15_000);
  const url = /dashboard listening on (http:\/\/\S+)/.exec(up.stdout())?.[1] ?? "";
  const link = loginLinkIn(up.stdout()) ?? "";
  expect(link.startsWith(`${url}/auth/link?token=`), link).toBe(true);
  const login = await redeemLink(link);
  return { url, login, fetch: (path, init) => keyedFetch(`${url}${path}`, login.headers, init) };
}

/** Poll the dashboard's /api/gateway (what the banner shows) until `ok` holds. */
async function gatewayView(
  dashboard: Pick<UpDashboard, "fetch">,
  ok: (v: GatewayApi) => boolean,
  ms = 20_000,
): Promise<GatewayApi> {
  const deadline = Date.now() + ms;
  let view: GatewayApi | null = null;
  while (Date.now() < deadline) {
    view = (await (await dashboard.fetch("/api/gateway")).json()) as GatewayApi;
    if (ok(view)) return view;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the dashboard never showed the expected gateway state; last: ${JSON.stringify(view)}`);
}

/** up.json of the profile, once `ok` holds. */
async function upState(paths: ProfilePaths, ok: (s: UpState) => boolean, ms = 20_000): Promise<UpState> {
  let state: UpState | null = null;
  await until(() => {
    state = readUpState(paths);
    return state !== null && ok(state);
  }, ms).catch(() => {
    throw new Error(`up.json never reached the expected state; last: ${JSON.stringify(state)}`);
  });
  return state as unknown as UpState;
}

const pidIn = (file: string): number => (JSON.parse(readFileSync(file, "utf8")) as { pid: number }).pid;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function chat(up: ListeningProcess, content: string): Promise<string> {
  const reply = await up.fetch("/v1/chat/completions", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });
  expect(reply.status).toBe(200);
  return ((await reply.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message
    .content as string;
}

/** Kill the gateway child with SIGKILL once up says it runs, and return its pid. */
async function killRunningGateway(paths: ProfilePaths, previous: number | null): Promise<number> {
  const running = await upState(paths, (s) => s.gateway.state === "running" && s.gateway.pid !== previous);
  const pid = pidIn(paths.pid);
  expect(pid).toBe(running.gateway.pid);
  process.kill(pid, "SIGKILL");
  return pid;
}

const ups: RunningProcess[] = [];

async function startUp(
  home: string,
  args = UP_ARGS,
  env: NodeJS.ProcessEnv = {},
): Promise<{ up: ListeningProcess; dashboard: UpDashboard }> {
  const up = await startGateway(home, args, ["up"], env);
  ups.push(up);
  return { up, dashboard: await dashboardOf(up) };
}

// Before the temp home is removed: an up still running is stopped and waited for, so its
// children are not still draining into the folder being deleted.
afterEach(async () => {
  for (const up of ups.splice(0)) {
    if (up.child.exitCode !== null || up.child.signalCode !== null) continue;
    up.child.kill("SIGTERM");
    await up.exited;
  }
});

describe("tenax up", () => {
  it("serves the gateway and the dashboard, which sees that gateway, until SIGTERM stops both cleanly", async () => {
    const { paths, home } = await simProfile(KEYED);
    const { up, dashboard } = await startUp(home);
    expect((await fetch(`${up.url}/health/live`)).status).toBe(200);
    expect(await chat(up, "hello from up")).toBe("echo: hello from up");
    // The page, with the cookies its printed link set (as the browser that opened it sends them).
    const page = await fetch(`${dashboard.url}/`, { headers: { cookie: dashboard.login.cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<title>Tenax dashboard<\/title>/);
    // The dashboard found the gateway's port 0 pick through the pid file, and reaches it.
    const view = await gatewayView(
      dashboard,
      (v) => v.reachable === true && v.supervisor?.gateway.state === "running",
    );
    expect(view).toMatchObject({ url: up.url, advice: null, supervisor: { gateway: { state: "running" } } });
    const gatewayPid = pidIn(paths.pid);
    const dashboardPid = pidIn(dashboardPidFile(paths));
    expect(readUpState(paths)).toMatchObject({
      pid: up.child.pid,
      gateway: { pid: gatewayPid },
      dashboard: { pid: dashboardPid },
    });

    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
    expect(up.stdout()).toMatch(/gateway stopped cleanly/);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
    expect(existsSync(paths.pid)).toBe(false);
    expect(existsSync(dashboardPidFile(paths))).toBe(false);
    expect(existsSync(upStateFile(paths))).toBe(false);
    expect(alive(gatewayPid) || alive(dashboardPid)).toBe(false);
    await expect(dashboard.fetch("/api/overview")).rejects.toThrow();
  });

  it("SIGTERM while its gateway still starts: up signals it at once, and the gateway ends its start there (it never listens)", async () => {
    const { paths, home } = await simProfile(KEYED);
    // No store yet: the gateway's start must create it, and waits on the write lock held here (a
    // store that exists needs no write to open, so nothing would hold the start). It is starting,
    // with its pid file, all along.
    // The dashboard's login is kept in that store too: it cannot make its link while the lock is
    // held, so up is not awaited until it prints one, only until its dashboard listens.
    const lock = new Database(paths.state);
    lock.exec("BEGIN IMMEDIATE");
    let up: RunningProcess;
    try {
      up = startRunning(home, ["up", ...UP_ARGS]);
      ups.push(up);
      await until(() => /dashboard listening on http:\/\/\S+/.test(up.stdout()), 15_000);
      const starting = await upState(paths, (s) => s.gateway.state === "starting" && s.gateway.pid !== null);
      await until(() => existsSync(paths.pid) && pidIn(paths.pid) === starting.gateway.pid, 15_000);
      up.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      lock.exec("COMMIT");
      lock.close();
    }
    expect(await up.exited).toBe(0);
    expect(up.stdout()).toMatch(/SIGTERM: stopping before it served/);
    expect(up.stdout()).not.toMatch(/gateway listening on/);
    expect(up.stdout()).toMatch(/gateway stopped cleanly/);
    expect(existsSync(paths.pid)).toBe(false);
    expect(existsSync(upStateFile(paths))).toBe(false);
  });

  it("on a home without a key, the dashboard it starts finds the key the gateway's first start wrote", async () => {
    const { paths, home } = await simProfile();
    const { up, dashboard } = await startUp(home, UP_ARGS, { TENAX_API_KEY: undefined });
    expect(up.stdout()).toContain(`wrote a new one to ${paths.env} as TENAX_API_KEY`);
    // Its probe sends the key from .env (whichever of the two read it first): /health answers, no 401.
    // (up.json may still say "starting" for a moment after the gateway first answers.)
    const view = await gatewayView(dashboard, (v) => v.reachable === true && v.advice === null);
    expect(view).toMatchObject({ url: up.url, advice: null });
    const seen = (await (await dashboard.fetch("/api/gateway")).json()) as { health: { served: boolean } };
    expect(seen.health.served).toBe(true);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });

  it("keeps the dashboard serving while the killed gateway restarts, and brings it back on the same port", async () => {
    const { paths, home } = await simProfile(KEYED);
    const { up, dashboard } = await startUp(home);
    await gatewayView(dashboard, (v) => v.reachable === true);
    const { pid: dashboardPid } = (await (await dashboard.fetch("/api/overview")).json()) as {
      pid: number;
    };

    const killed = await killRunningGateway(paths, null);
    // What feeds the banner: the gateway is down and up restarts it; the advice is to wait.
    const down = await gatewayView(
      dashboard,
      (v) => v.reachable === false && v.supervisor?.gateway.state === "restarting",
    );
    expect(down.advice).toMatchObject({ manager: "up", command: "tenax status" });
    expect(down.advice?.situation).toMatch(
      new RegExp(
        `the gateway was killed by SIGKILL \\d+ s ago; tenax up \\(pid ${up.child.pid}\\) restarts it in \\d s \\(restart 1;`,
      ),
    );
    expect(down.advice?.next).toMatch(/^wait: /);
    expect(up.stderr()).toMatch(
      /the gateway \(pid \d+\) was killed by SIGKILL; tenax up starts it again in 1 s/,
    );

    // Back by itself, at the address clients know, and it serves; the dashboard never went away.
    // The new gateway may answer a moment before up has seen its listening line and said so
    // (state "starting" then, with advice to wait): back is when up says it runs.
    const back = await gatewayView(
      dashboard,
      (v) =>
        v.reachable === true &&
        v.supervisor?.gateway.restarts === 1 &&
        v.supervisor.gateway.state === "running",
    );
    expect(back.url).toBe(up.url);
    expect(back.advice).toBeNull();
    expect(pidIn(paths.pid)).not.toBe(killed);
    expect(await chat(up, "after the crash")).toBe("echo: after the crash");
    const overview = (await (await dashboard.fetch("/api/overview")).json()) as { pid: number };
    expect(overview.pid).toBe(dashboardPid);
    const status = await tenaxAsync(home, ["status"]);
    expect(status.stdout).toMatch(
      new RegExp(
        `gateway\\s+ok\\s+serving on ${up.url} \\(pid \\d+\\), run by tenax up \\(pid ${up.child.pid}\\), restarted 1 time\\(s\\) \\(the last one was killed by SIGKILL\\)`,
      ),
    );
    expect(status.status).toBe(0);
  });

  // Three starts and a revival of the gateway, a status and a browser: give a loaded machine time.
  it("gives up after 3 unclean exits within 5 minutes, says so everywhere, and `tenax up` as printed brings it back", {
    timeout: 120_000,
  }, async () => {
    const { paths, home } = await simProfile(KEYED);
    const { up, dashboard } = await startUp(home);
    let previous: number | null = null;
    for (let i = 0; i < 3; i++) previous = await killRunningGateway(paths, previous);

    // Its own output.
    await until(() => /gave up restarting it/.test(up.stderr()), 20_000);
    expect(up.stdout()).toMatch(/tenax up: the dashboard keeps serving, and shows this/);
    expect(up.stderr()).toMatch(
      /was killed by SIGKILL, its unclean exit 3 within 5 min: tenax up gave up restarting it \(a crash loop\)\. Fix what \S+gateway\.log shows, then run: tenax up\n/,
    );
    // The dashboard.
    const view = await gatewayView(
      dashboard,
      (v) => v.reachable === false && v.supervisor?.gateway.state === "gave_up",
    );
    expect(view.supervisor?.gateway).toMatchObject({
      restarts: 2,
      unclean_exits: 3,
      gave_up: { reason: "crash_loop" },
    });
    expect(view.advice).toMatchObject({
      manager: "up",
      next: `fix what ${paths.logs}/gateway.log shows, then run: tenax up`,
      command: "tenax up",
    });
    // tenax status: down, exit 2, the state and the next command.
    const status = await tenaxAsync(home, ["status"]);
    expect(status.status).toBe(2);
    expect(status.stdout).toMatch(
      new RegExp(
        `gateway\\s+down\\s+tenax up \\(pid ${up.child.pid}\\) gave up restarting the gateway after 3 unclean exits within 5 min \\(a crash loop\\); the gateway was killed by SIGKILL`,
      ),
    );
    expect(status.stdout).toContain(
      `next (gateway): fix what ${paths.logs}/gateway.log shows, then run: tenax up\n`,
    );
    // Still up and serving its page: the dashboard keeps showing the outage.
    expect(up.child.exitCode).toBeNull();

    // The banner in Chromium, logged in by opening a link from tenax dashboard link (at up's
    // dashboard), and its command run through a shell exactly as printed.
    const made = await tenaxAsync(home, ["dashboard", "link"]);
    expect(made.status).toBe(0);
    const link = made.stdout.split("\n")[0] ?? "";
    expect(link.startsWith(`${dashboard.url}/auth/link?token=`), made.stdout).toBe(true);
    const page = await openPage();
    await page.goto(link);
    expect(page.url()).toBe(`${dashboard.url}/`);
    const banner = page.locator("#banner");
    await banner.waitFor({ state: "visible", timeout: 5000 });
    await expect
      .poll(() => banner.textContent(), { timeout: 5000 })
      .toMatch(
        /^gateway unreachable since \d\d:\d\d:\d\d — http:\/\/\S+ does not answer \(connection refused: nothing listens there\)\. Tenax up \(pid \d+\) gave up restarting the gateway after 3 unclean exits within 5 min \(a crash loop\); the gateway was killed by SIGKILL .*\. Fix what \S+gateway\.log shows, then run: tenax up$/,
      );
    expect(await banner.getAttribute("data-manager")).toBe("up");
    const command = (await banner.locator("code").textContent()) ?? "";
    expect(command).toBe("tenax up");
    const again = await runPrintedAsync(home, command);
    expect(again.stderr).toBe("");
    expect(again.stdout).toMatch(/the gateway serves again \(pid \d+, port \d+\) under tenax up/);
    expect(again.status).toBe(0);
    await banner.waitFor({ state: "hidden", timeout: 10_000 });
    expect(await chat(up, "revived")).toBe("echo: revived");

    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });

  it("gives up on a gateway that cannot bind its port, and the log it points to says why", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as AddressInfo).port;
    try {
      const { paths, home } = await simProfile(KEYED);
      const up = await startListening(
        home,
        ["up", "--gateway-port", String(port), "--dashboard-port", "0"],
        "dashboard",
      );
      ups.push(up);
      // The dashboard's printed link, found in up's output and opened by the helper, is the login.
      expect(up.login).not.toBeNull();
      await until(() => /gave up restarting it/.test(up.stderr()), 30_000);
      expect(up.stderr().match(/port \d+ on 127\.0\.0\.1 is already in use/g)?.length).toBe(3);
      expect(up.stderr()).toMatch(
        /the gateway \(pid \d+\) exited with code 1; tenax up starts it again in 1 s/,
      );
      expect(up.stderr()).toMatch(
        /the gateway \(pid \d+\) exited with code 1; tenax up starts it again in 2 s/,
      );
      const log = readFileSync(`${paths.logs}/gateway.log`, "utf8");
      expect(
        log.match(
          new RegExp(
            `the gateway stopped on an error: port ${port} on 127\\.0\\.0\\.1 is already in use`,
            "g",
          ),
        )?.length,
      ).toBe(3);
      const view = await gatewayView(up, (v) => v.supervisor?.gateway.state === "gave_up");
      expect(view.supervisor?.gateway.last_exit).toMatchObject({ code: 1, signal: null, clean: false });
    } finally {
      holder.close();
    }
  });

  it("leaves no child behind when up itself is killed with SIGKILL: the gateway drains and both exit", async () => {
    const { paths, home } = await simProfile(KEYED);
    const { up, dashboard } = await startUp(home);
    await gatewayView(dashboard, (v) => v.reachable === true);
    const gatewayPid = pidIn(paths.pid);
    const dashboardPid = pidIn(dashboardPidFile(paths));
    const killedAt = Date.now();
    up.child.kill("SIGKILL");
    await until(() => !alive(gatewayPid) && !alive(dashboardPid), 10_000);
    console.log(`tenax up killed: both children gone ${Date.now() - killedAt} ms later`);
    // A drain, not an abrupt exit: the pid file is removed and the stop marked clean.
    expect(existsSync(paths.pid)).toBe(false);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
    expect(readFileSync(`${paths.logs}/gateway.log`, "utf8")).toMatch(/the pipe from tenax up closed/);
  });

  it("passes doctor's ports check while it runs on the configured ports, and restarts on the same fixed port", async () => {
    const [gatewayPort, dashboardPort] = [await freePort(), await freePort()];
    const paths = profileWith();
    mkdirSync(paths.dir, { recursive: true });
    writeFileSync(
      paths.config,
      `gateway: { port: ${gatewayPort}, ${KEYED} }\ndashboard: { port: ${dashboardPort} }\n`,
      { mode: 0o600 },
    );
    const { up, dashboard } = await startUp(paths.home, []);
    expect(up.url).toBe(`http://127.0.0.1:${gatewayPort}`);
    expect(dashboard.url).toBe(`http://127.0.0.1:${dashboardPort}`);
    await gatewayView(dashboard, (v) => v.reachable === true);
    const doctor = await tenaxAsync(paths.home, ["doctor", "--json"]);
    const ports = (
      JSON.parse(doctor.stdout) as { checks: Array<{ name: string; status: string; detail: string }> }
    ).checks.find((c) => c.name === "ports");
    expect(ports).toMatchObject({ status: "ok" });
    expect(ports?.detail).toBe(
      `gateway 127.0.0.1:${gatewayPort} held by this profile's gateway (pid ${pidIn(paths.pid)}); dashboard 127.0.0.1:${dashboardPort} held by this profile's dashboard (pid ${pidIn(dashboardPidFile(paths))})`,
    );

    const killed = await killRunningGateway(paths, null);
    const back = await gatewayView(
      dashboard,
      (v) => v.reachable === true && v.supervisor?.gateway.restarts === 1,
    );
    expect(back.url).toBe(`http://127.0.0.1:${gatewayPort}`);

    // A clean stop of the gateway alone (SIGTERM, a drain) is no crash: started again at once, not counted.
    const running = await upState(paths, (s) => s.gateway.state === "running" && s.gateway.pid !== killed);
    process.kill(running.gateway.pid as number, "SIGTERM");
    const again = await upState(paths, (s) => s.gateway.state === "running" && s.gateway.restarts === 2);
    expect(again.gateway).toMatchObject({
      unclean_exits: 1,
      last_exit: { code: 0, signal: null, clean: true },
    });
    expect(up.stdout()).toMatch(/stopped cleanly \(exit 0\) without tenax up asking; starting it again/);
  });

  it("with a bad config: the dashboard serves the error (once, with its file, line and key), and the fixed config starts the gateway", async () => {
    const good = `gateway:\n  ${KEYED}\n`;
    const paths = profileWith(`${good}  no_such_key: 1\n`);
    const up = await startListening(paths.home, ["up", ...UP_ARGS], "dashboard");
    ups.push(up);
    // A config that does not load leaves the login at token mode: the helper opened the printed link.
    expect(up.login).not.toBeNull();
    const output = () => `${up.stdout()}\n${up.stderr()}`;
    const state = await upState(paths, (s) => s.gateway.state === "gave_up");
    expect(state.gateway).toMatchObject({ restarts: 0, gave_up: { reason: "config_error" } });
    // The page's config layer says what is wrong and where.
    const layers = (await (await up.fetch("/api/layers")).json()) as {
      ok: boolean;
      error?: { message: string };
    };
    expect(layers.ok).toBe(false);
    expect(layers.error?.message).toContain(`${paths.config}:3: gateway.no_such_key: unknown key`);
    const view = await gatewayView(up, (v) => v.supervisor?.gateway.state === "gave_up");
    expect(view.advice?.situation).toMatch(
      /cannot start on its configuration \(exit 78\); tenax up \(pid \d+\) starts it again once .*config\.yaml or .*\.env changes/,
    );
    await until(() => /tenax up starts it again once/.test(output()), 10_000);
    // Each error once: the gateway's, not the dashboard's too.
    expect(output().match(/no_such_key: unknown key/g)?.length, output()).toBe(1);
    // Give a restart (1 s after a crash) time to happen, had it been one; up and its page stay.
    await new Promise((r) => setTimeout(r, 1500));
    expect(up.child.exitCode).toBeNull();
    expect(readUpState(paths)?.gateway.restarts).toBe(0);
    expect((await up.fetch("/api/overview")).status).toBe(200);

    writeFileSync(paths.config, good);
    const fixed = await upState(paths, (s) => s.gateway.state === "running");
    expect(fixed.gateway).toMatchObject({ restarts: 1, gave_up: null });
    expect(output()).toMatch(/config\.yaml changed: starting the gateway again \(restart 1\)/);
    await gatewayView(up, (v) => v.reachable === true);
    const after = (await (await up.fetch("/api/layers")).json()) as { ok: boolean };
    expect(after.ok).toBe(true);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });

  it("never restarts a gateway that exits 2 (a refused setting), and tells it as a config error", async () => {
    const { paths, home } = await simProfile("auth: none");
    const up = await startListening(home, ["up", "--gateway-host", "0.0.0.0", ...UP_ARGS], "dashboard");
    ups.push(up);
    const state = await upState(paths, (s) => s.gateway.state === "gave_up");
    expect(state.gateway).toMatchObject({
      restarts: 0,
      unclean_exits: 0,
      gave_up: { reason: "config_error" },
      last_exit: { code: 2, signal: null, clean: false },
    });
    expect(up.stderr()).toMatch(/refusing to serve on 0\.0\.0\.0 with gateway\.auth: none/);
    expect(up.stderr()).toMatch(
      /the gateway cannot start on its configuration \(exit 2; its error is above, and on the dashboard\): tenax up starts it again once .*config\.yaml or .*\.env changes/,
    );
    const view = await gatewayView(up, (v) => v.supervisor?.gateway.state === "gave_up");
    expect(view.advice?.situation).toMatch(/cannot start on its configuration \(exit 2\)/);
    // Give a restart (1 s after a crash) time to happen, had it been one.
    await new Promise((r) => setTimeout(r, 1500));
    expect(up.stdout()).not.toMatch(/starting the gateway again/);
    expect(readUpState(paths)?.gateway.restarts).toBe(0);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(2);
  });

  it("ignores a stale up.json whose pid now belongs to another process (and never signals it)", async () => {
    const { paths, home } = await simProfile(KEYED);
    // A live process that is no Tenax, with `up` among its arguments, holds the dead up's pid.
    const other = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)", "up"], { stdio: "ignore" });
    try {
      const pid = other.pid ?? 0;
      // As a killed up left it: given up on its gateway, so a second up would ask it (SIGUSR2) to revive.
      writeFileSync(
        upStateFile(paths),
        `${JSON.stringify({
          pid,
          started_at: 1,
          updated_at: 2,
          gateway: {
            state: "gave_up",
            pid: null,
            host: "127.0.0.1",
            port: 8700,
            restarts: 2,
            next_restart_at: null,
            last_exit: { code: 1, signal: null, at: 1, clean: false },
            unclean_exits: 3,
            max_unclean_exits: 3,
            window_ms: 300_000,
            gave_up: { reason: "crash_loop", at: 1 },
          },
          dashboard: { pid: null, state: "stopped", last_exit: null },
        })}\n`,
      );
      const { up } = await startUp(home);
      expect(up.stdout()).not.toMatch(/asked tenax up/);
      expect(readUpState(paths)?.pid).toBe(up.child.pid);
      expect(alive(pid)).toBe(true);
      up.child.kill("SIGTERM");
      expect(await up.exited).toBe(0);
    } finally {
      other.kill("SIGKILL");
    }
  });

  it("keeps the gateway serving when the dashboard dies, and says how to start it again", async () => {
    const { home } = await simProfile(KEYED);
    const { up, dashboard } = await startUp(home);
    const { pid } = (await (await dashboard.fetch("/api/overview")).json()) as { pid: number };
    process.kill(pid, "SIGKILL");
    await until(() => /the dashboard stopped/.test(up.stderr()));
    expect(up.stderr()).toMatch(/the gateway keeps serving\. Start it again with: tenax dashboard/);
    expect((await fetch(`${up.url}/health/live`)).status).toBe(200);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });

  it("says so when the built-in simulator answers", async () => {
    const paths = profileWith();
    const { up } = await startUp(paths.home);
    expect(up.stderr()).toMatch(/built-in local simulator answers/);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });
});
