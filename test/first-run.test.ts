// The first run, from nothing: a machine with no ~/.tenax (through HOME) and a TENAX_HOME that
// does not exist yet. Commands that need the profile create its folder (0700, with spool/, logs/,
// cron/); commands that only look answer cleanly and create nothing; a named profile that does
// not exist stays an error that says how to create it; a first start calls itself that, not an
// unclean stop; the dashboard `up` starts asks for a login, and the link it prints logs in once.
// All through the built CLI.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BIN, requireBuild, runAsync } from "./helpers/cli.js";
import { loginLinkIn, redeemLink } from "./helpers/dashboard-login.js";
import { until } from "./helpers/gateway.js";
import { runToEnd, startListening } from "./helpers/listening.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

interface FreshHome {
  /** Where the default profile will live: $HOME/.tenax, or TENAX_HOME. */
  home: string;
  env: NodeJS.ProcessEnv;
  key: string;
}

/** A home that does not exist, reached the way a new user reaches it. */
function freshHome(via: "HOME" | "TENAX_HOME"): FreshHome {
  // The gateway may require a key by default; with one in the environment it is the key to send.
  const key = randomBytes(16).toString("hex");
  const env: NodeJS.ProcessEnv = { ...process.env, TENAX_API_KEY: key };
  delete env.TENAX_PROFILE;
  delete env.TENAX_HOME;
  const user = tempDir("tenax-user-");
  env.HOME = user;
  // Listed even when absent: the test helpers take these as changes to their own environment.
  if (via === "HOME") return { home: join(user, ".tenax"), env: { ...env, TENAX_HOME: undefined }, key };
  const home = join(tempDir("tenax-fresh-"), "not", "yet");
  env.TENAX_HOME = home;
  return { home, env, key };
}

const tenax = (fresh: FreshHome, args: string[]) =>
  runAsync(process.execPath, [BIN, ...args], { env: fresh.env });

function expectPrivateHome(home: string): void {
  for (const dir of [home, join(home, "spool"), join(home, "logs"), join(home, "cron")]) {
    expect(statSync(dir).isDirectory(), dir).toBe(true);
    expect(statSync(dir).mode & 0o777, dir).toBe(0o700);
  }
}

async function chatCompletion(url: string, key: string, text: string) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
  return body.choices[0]?.message.content;
}

describe.each(["HOME", "TENAX_HOME"] as const)("the first run from nothing, through %s", (via) => {
  it("`gateway run` creates the home (0700), serves /health/live and a turn, and stops cleanly", async () => {
    const fresh = freshHome(via);
    expect(existsSync(fresh.home)).toBe(false);
    const gw = await startListening(fresh.home, ["gateway", "run", "--port", "0"], "gateway", fresh.env);
    expectPrivateHome(fresh.home);
    expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
    expect(await chatCompletion(gw.url, fresh.key, "hello from nothing")).toBe("echo: hello from nothing");
    expect(gw.stderr()).not.toMatch(/a bug in Tenax/);
    // A brand-new store had no gateway before: nothing was stopped, cleanly or not.
    expect(gw.stdout()).toContain("first gateway start on this profile's store");
    expect(`${gw.stdout()}${gw.stderr()}`).not.toMatch(/clean-shutdown marker|not clean/);
    gw.child.kill("SIGTERM");
    expect(await gw.exited).toBe(0);
    expect(existsSync(join(fresh.home, "gateway.pid"))).toBe(false);
    expect(existsSync(join(fresh.home, ".clean_shutdown"))).toBe(true);
    // The next start had one, which stopped cleanly; after a kill -9, the one after says it was not.
    const again = await startListening(fresh.home, ["gateway", "run", "--port", "0"], "gateway", fresh.env);
    expect(again.stdout()).toContain("the last gateway stop was clean");
    again.child.kill("SIGKILL");
    await again.exited;
    const third = await startListening(fresh.home, ["gateway", "run", "--port", "0"], "gateway", fresh.env);
    expect(third.stdout()).toMatch(
      /no clean-shutdown marker: the last gateway stop was not clean \(that gateway, pid \d+, started /,
    );
    third.child.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  });

  it("`up` (what npm start runs) starts the gateway and the dashboard, which the printed link logs in to once", async () => {
    const fresh = freshHome(via);
    const args = ["up", "--gateway-port", "0", "--dashboard-port", "0"];
    const up = await startListening(fresh.home, args, "gateway", fresh.env);
    await until(() => loginLinkIn(up.stdout()) !== null);
    const dashboard = /dashboard listening on (http:\/\/\S+)/.exec(up.stdout())?.[1] ?? "";
    const link = loginLinkIn(up.stdout()) ?? "";
    expect(link.startsWith(`${dashboard}/auth/link?token=`), link).toBe(true);
    expect(up.stdout()).toMatch(/works once, until .* UTC; another: tenax dashboard link/);
    expectPrivateHome(fresh.home);
    // Its state file went into the home it made, before either child had made it.
    expect(existsSync(join(fresh.home, "up.json"))).toBe(true);
    expect(up.stderr()).not.toMatch(/could not write/);
    expect((await fetch(`${up.url}/health/live`)).status).toBe(200);
    // Before the link is opened, the page is the login page, which says how to get a link.
    const asked = await fetch(`${dashboard}/`);
    expect(asked.status).toBe(401);
    expect(await asked.text()).toMatch(/tenax dashboard link/);
    // Opened once (as a browser does: its cookies go with the next request), it is the dashboard.
    const login = await redeemLink(link);
    const page = await fetch(`${dashboard}/`, { headers: { cookie: login.cookie } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<title>Tenax dashboard<\/title>/);
    // Opened again, it logs nobody in, and the page says why.
    const again = await fetch(link, { redirect: "manual" });
    expect(again.status).toBe(401);
    expect(again.headers.getSetCookie()).toEqual([]);
    expect(await again.text()).toMatch(/this login link was already used\b.*: a link logs in once/);
    expect(up.stdout()).toContain("first gateway start on this profile's store");
    expect(`${up.stdout()}${up.stderr()}`).not.toMatch(/clean-shutdown marker|not clean/);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
    expect(up.stderr()).not.toMatch(/a bug in Tenax/);
  });

  it("`chat -q hi` answers, and the home it made is private", async () => {
    const fresh = freshHome(via);
    const run = await tenax(fresh, ["chat", "-q", "hi", "--json"]);
    expect(run.stderr).not.toMatch(/a bug in Tenax|does not exist/);
    expect(run.status).toBe(0);
    expect((JSON.parse(run.stdout) as { reply: string }).reply).toBe("echo: hi");
    expectPrivateHome(fresh.home);
    // The transcripts are the owner's alone, whatever the umask.
    for (const file of ["state.db", "search.db"]) {
      expect(existsSync(join(fresh.home, file)), file).toBe(true);
      expect(statSync(join(fresh.home, file)).mode & 0o777, file).toBe(0o600);
    }
  });

  it("`status`, `sessions list` and `doctor` answer truthfully and create nothing", async () => {
    const fresh = freshHome(via);
    // Run at once: each must create nothing whatever the others do, and the home's absence is
    // checked after all three.
    const [status, list, doctor] = await Promise.all([
      tenax(fresh, ["status", "--json"]),
      tenax(fresh, ["sessions", "list"]),
      tenax(fresh, ["doctor", "--json"]),
    ]);
    // Down, truthfully: no gateway runs; the store is simply not made yet, and the next step is said.
    expect(status.status).toBe(2);
    const report = JSON.parse(status.stdout) as {
      components: Record<string, { status: string; detail: string; next: string | null }>;
    };
    expect(report.components.store).toMatchObject({
      status: "ok",
      detail: expect.stringMatching(/^no store yet/),
    });
    // The next step leads to `tenax up`, whether the default port is free or (a developer's own
    // gateway, say) held by another: a fresh home has no config to choose another port.
    expect(report.components.gateway).toMatchObject({
      status: "down",
      next: expect.stringMatching(/\btenax up\b/),
    });
    expect(list).toMatchObject({ status: 0, stdout: "no sessions yet\n" });
    const checks = (JSON.parse(doctor.stdout) as { checks: Array<{ name: string; detail: string }> }).checks;
    expect(checks.find((c) => c.name === "permissions")?.detail).toMatch(/does not exist yet/);
    for (const run of [status, list, doctor]) expect(run.stderr).not.toMatch(/a bug in Tenax/);
    // Looking is not using: a home appears only when a command needs it.
    expect(existsSync(fresh.home)).toBe(false);
  });

  it("a named profile that does not exist is a usage error that says how to create it", async () => {
    const fresh = freshHome(via);
    const commands = [["gateway", "run", "--port", "0"], ["chat", "-q", "hi"], ["up"]];
    // Run at once: each must refuse, and create nothing, whatever the others do.
    const runs = await Promise.all(
      commands.map((args) => runToEnd(fresh.home, ["--profile", "ghost", ...args], fresh.env)),
    );
    for (const [i, run] of runs.entries()) {
      const args = commands[i] ?? [];
      expect(run.status, args.join(" ")).toBe(2);
      expect(run.output).toMatch(/no profile named "ghost"/);
      expect(run.output).toContain("tenax profile create ghost");
      expect(run.output).not.toMatch(/a bug in Tenax/);
    }
    expect(existsSync(fresh.home)).toBe(false);
  });
});

describe("a model listed with its context_window only", () => {
  it("loads, and a turn runs on it", async () => {
    const fresh = freshHome("TENAX_HOME");
    mkdirSync(fresh.home, { recursive: true });
    writeFileSync(
      join(fresh.home, "config.yaml"),
      "model: { provider: sim, name: echo }\nproviders:\n  sim:\n    type: simulator\n    models:\n      echo: { context_window: 32000 }\n",
    );
    const run = await tenax(fresh, ["chat", "-q", "hi", "--json"]);
    expect(run.stderr).not.toMatch(/max_output_tokens/);
    expect(run.status).toBe(0);
    expect((JSON.parse(run.stdout) as { reply: string }).reply).toBe("echo: hi");
  });
});
