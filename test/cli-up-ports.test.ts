// The ports given to `tenax up` as flags are where the profile serves, for everything that shows or
// probes it, from the built CLI with real processes: the dashboard probes the gateway there from its
// first look, its login links (printed at its start, and by `tenax dashboard link`) are made there,
// `tenax status` reports both addresses, `tenax profile list` and `show` print them (config.yaml's
// beside them), whatever config.yaml says.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readUpState } from "../src/profile/up-state.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { loginLinkIn, redeemLink } from "./helpers/dashboard-login.js";
import { until } from "./helpers/gateway.js";
import { type ListeningProcess, startListening } from "./helpers/listening.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const ups: ListeningProcess[] = [];
afterEach(async () => {
  for (const up of ups.splice(0)) {
    up.child.kill("SIGTERM");
    await up.exited;
  }
});

async function distinctPorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

describe("tenax up --gateway-port P --dashboard-port Q", () => {
  it("is where the dashboard, tenax status and tenax profile look, not config.yaml's ports", async () => {
    const [configGateway, configDashboard, gatewayPort, dashboardPort] = await distinctPorts(4);
    const paths = profileWith(
      `gateway: { port: ${configGateway}, api_key: "\${TENAX_API_KEY}" }\ndashboard: { port: ${configDashboard} }\n`,
    );
    const up = await startListening(
      paths.home,
      ["up", "--gateway-port", String(gatewayPort), "--dashboard-port", String(dashboardPort)],
      "dashboard",
    );
    ups.push(up);
    const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    const dashboardUrl = `http://127.0.0.1:${dashboardPort}`;
    expect(up.url).toBe(dashboardUrl);
    // The link it printed, found in up's output, is on that port, and it logged in (up.fetch sends it).
    expect(loginLinkIn(up.stdout())).toMatch(new RegExp(`^${dashboardUrl}/auth/link\\?token=`));
    expect(up.login).not.toBeNull();
    // The dashboard's first look is already at the gateway's port, before the gateway listens.
    await until(() => up.stdout().includes("dashboard: probing the gateway at"), 15_000);
    expect(up.stdout()).toContain(`dashboard: probing the gateway at ${gatewayUrl} (as tenax up starts it);`);
    await until(() => readUpState(paths)?.gateway.state === "running", 20_000);

    const view = (await (await up.fetch("/api/gateway")).json()) as {
      url: string;
      reachable: boolean;
    };
    expect(view.url).toBe(gatewayUrl);

    // A link made while it runs is made on the port it runs on, and logs in there.
    const made = await tenaxAsync(paths.home, ["dashboard", "link"]);
    expect(made.status).toBe(0);
    const link = made.stdout.split("\n")[0] ?? "";
    expect(link).toMatch(new RegExp(`^${dashboardUrl}/auth/link\\?token=`));
    expect(made.stderr).not.toMatch(/no dashboard runs/);
    const login = await redeemLink(link);
    expect((await fetch(`${dashboardUrl}/api/overview`, { headers: login.headers })).status).toBe(200);

    const status = await tenaxAsync(paths.home, ["status", "--json"]);
    const report = JSON.parse(status.stdout) as {
      components: { gateway: { status: string; url: string; dashboard_url?: string; detail: string } };
    };
    expect(report.components.gateway).toMatchObject({
      status: "ok",
      url: gatewayUrl,
      dashboard_url: dashboardUrl,
    });
    const human = await tenaxAsync(paths.home, ["status"]);
    expect(human.stdout).toContain(`serving on ${gatewayUrl}`);
    expect(human.stdout).toContain(`the dashboard serves on ${dashboardUrl}`);

    const list = await tenaxAsync(paths.home, ["profile", "list", "--json"]);
    const profiles = (
      JSON.parse(list.stdout) as {
        profiles: Array<{
          name: string;
          gateway_port: number;
          dashboard_port: number;
          configured_ports: { gateway: number; dashboard: number };
        }>;
      }
    ).profiles;
    expect(profiles.find((p) => p.name === "default")).toMatchObject({
      gateway_port: gatewayPort,
      dashboard_port: dashboardPort,
      configured_ports: { gateway: configGateway, dashboard: configDashboard },
    });
    const table = await tenaxAsync(paths.home, ["profile", "list"]);
    expect(table.stdout).toMatch(new RegExp(`\\* default\\s+${gatewayPort}\\s+${dashboardPort}\\s`));
    const show = await tenaxAsync(paths.home, ["profile", "show"]);
    expect(show.stdout).toContain(`gateway    port ${gatewayPort} (config.yaml: ${configGateway}), running`);
    expect(show.stdout).toContain(`dashboard  port ${dashboardPort} (config.yaml: ${configDashboard})`);
  }, 60_000);
});
