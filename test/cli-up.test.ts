// `tenax up` (what `npm start` runs): the gateway in the foreground and the dashboard as a child
// process beside it; either can die while the other stays up, and SIGTERM stops both cleanly.
import { existsSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild } from "./helpers/cli.js";
import { simProfile, startGateway, until } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const UP_ARGS = ["--gateway-port", "0", "--dashboard-port", "0"];

async function dashboardOf(up: { stdout(): string }): Promise<string> {
  await until(() => /dashboard listening on http:\/\/\S+/.test(up.stdout()));
  return /dashboard listening on (http:\/\/\S+)/.exec(up.stdout())?.[1] ?? "";
}

/** The dashboard's view of the gateway, once it has reached it (or after 10 s). */
async function gatewayAsSeen(dashboard: string) {
  let gateway: { url?: string; reachable?: boolean | null; error?: string | null } = {};
  for (let i = 0; i < 50 && !(gateway.reachable === true && gateway.error === null); i++) {
    gateway = (await (await fetch(`${dashboard}/api/gateway`)).json()) as typeof gateway;
    if (gateway.reachable !== true || gateway.error !== null) await new Promise((r) => setTimeout(r, 200));
  }
  return gateway;
}

describe("tenax up", () => {
  it("serves the gateway and the dashboard, which sees that gateway, until SIGTERM stops both", async () => {
    const { paths, home } = await simProfile();
    const up = await startGateway(home, UP_ARGS, ["up"]);
    const dashboard = await dashboardOf(up);
    const live = await fetch(`${up.url}/health/live`);
    expect(live.status).toBe(200);
    const reply = await up.fetch("/v1/chat/completions", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "echo", messages: [{ role: "user", content: "hello from up" }] }),
    });
    expect(
      ((await reply.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]?.message
        .content,
    ).toBe("echo: hello from up");
    const page = await fetch(`${dashboard}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<title>Tenax dashboard<\/title>/);
    // The dashboard found the gateway's port 0 pick through the pid file, and reaches it with its key.
    expect(await gatewayAsSeen(dashboard)).toMatchObject({ url: up.url, reachable: true, error: null });

    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
    expect(existsSync(paths.cleanShutdown)).toBe(true);
    await expect(fetch(`${dashboard}/api/overview`)).rejects.toThrow();
  });

  it("on a home without a key, the dashboard it starts finds the key the gateway's first start wrote", async () => {
    const { paths, home } = await simProfile();
    const up = await startGateway(home, UP_ARGS, ["up"], { TENAX_API_KEY: undefined });
    const dashboard = await dashboardOf(up);
    expect(up.stdout()).toContain(`wrote a new one to ${paths.env} as TENAX_API_KEY`);
    // Its probe sends the key from .env (whichever of the two read it first): /health answers, no 401.
    expect(await gatewayAsSeen(dashboard)).toMatchObject({ url: up.url, reachable: true, error: null });
    const seen = (await (await fetch(`${dashboard}/api/gateway`)).json()) as { health: { served: boolean } };
    expect(seen.health.served).toBe(true);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });

  it("keeps the gateway serving when the dashboard dies, and says how to start it again", async () => {
    const { home } = await simProfile();
    const up = await startGateway(home, UP_ARGS, ["up"]);
    const dashboard = await dashboardOf(up);
    const { pid } = (await (await fetch(`${dashboard}/api/overview`)).json()) as { pid: number };
    process.kill(pid, "SIGKILL");
    await until(() => /the dashboard stopped/.test(up.stderr()));
    expect(up.stderr()).toMatch(/the gateway keeps serving\. Start it again with: tenax dashboard/);
    expect((await fetch(`${up.url}/health/live`)).status).toBe(200);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });

  it("says so when the built-in simulator answers", async () => {
    const paths = profileWith();
    const up = await startGateway(paths.home, UP_ARGS, ["up"]);
    expect(up.stderr()).toMatch(/built-in local simulator answers/);
    up.child.kill("SIGTERM");
    expect(await up.exited).toBe(0);
  });
});
