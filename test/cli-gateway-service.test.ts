// The service commands through the real `tenax` CLI (built dist/) as a child process, with the fake
// systemctl on its PATH, or none: status then still tells how a real gateway runs (under tenax up,
// in the foreground). Runs once main.ts adds them to the gateway group.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, cliEnvironment, printedCommands, ROOT, requireBuild, runAsync } from "./helpers/cli.js";
import { freePort } from "./helpers/dashboard.js";
import { type FakeHealth, fakeEnvironment, fakeHealthServer, fakeSystemd } from "./helpers/fake-systemd.js";
import { simProfile, startGateway } from "./helpers/gateway.js";
import type { ListeningProcess } from "./helpers/listening.js";
import { tempDir } from "./helpers/tmp.js";

const wired = readFileSync(join(ROOT, "src", "cli", "main.ts"), "utf8").includes(
  "registerGatewayServiceCommands",
);

const servers: FakeHealth[] = [];
const running: ListeningProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const proc of running.splice(0)) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) continue;
    proc.child.kill("SIGTERM");
    await proc.exited;
  }
});

describe.skipIf(!wired)("tenax gateway service commands, through the real CLI", () => {
  it("installs, starts, reports healthy, and its printed hints run as printed", async () => {
    requireBuild();
    const home = tempDir("tenax-home-");
    const fake = fakeSystemd();
    const health = await fakeHealthServer(true);
    servers.push(health);
    writeFileSync(join(home, "config.yaml"), `gateway: { host: 127.0.0.1, port: ${health.port} }\n`);
    const xdg = tempDir("tenax-xdg-");
    const env: NodeJS.ProcessEnv = {
      ...cliEnvironment(home),
      ...fakeEnvironment(fake, xdg),
      TENAX_HOME: home,
    };
    const tenax = (args: string[]) => runAsync(process.execPath, [BIN, ...args], { env });

    const install = await tenax(["gateway", "install"]);
    expect(install.stderr).toBe("");
    expect(install.status).toBe(0);
    const unitFile = join(xdg, "systemd", "user", "tenax-gateway.service");
    expect(readFileSync(unitFile, "utf8")).toContain(`ExecStart=${process.execPath} ${BIN} gateway run\n`);

    // The printed next step, run by a shell exactly as printed, starts the unit.
    const [start] = printedCommands(install.stdout);
    expect(start).toBe("tenax gateway start");
    const script = `tenax() { "${process.execPath}" "${BIN}" "$@"; }\n${start}`;
    const started = spawnSync("sh", ["-c", script], { cwd: home, env, encoding: "utf8" });
    expect(started.status).toBe(0);
    expect(fake.state().units["tenax-gateway.service"]?.ActiveState).toBe("active");

    const status = await tenax(["gateway", "status", "--json"]);
    expect(status.status).toBe(0);
    expect((JSON.parse(status.stdout) as { status: string }).status).toBe("ok");

    writeFileSync(unitFile, "[Service]\nExecStart=/bin/other\n");
    const refused = await tenax(["gateway", "install"]);
    expect(refused.status).toBe(1);
    expect(printedCommands(refused.stderr)).toEqual(["tenax gateway install --force"]);
  });

  it("without systemd, says a gateway under tenax up runs, with both pids, and exits 0", async () => {
    requireBuild();
    const { home } = await simProfile(`port: ${await freePort()}`);
    const up = await startGateway(home, ["--gateway-port", "0", "--dashboard-port", "0"], ["up"]);
    running.push(up);
    const gatewayPid = pidOf(home);
    const noSystemd = { PATH: tempDir("tenax-empty-path-") };
    const status = await tenaxRun(home, ["gateway", "status"], noSystemd);
    expect(status.stderr).toBe("");
    expect(status.stdout).toContain("gateway of profile 'default': ok");
    expect(status.stdout).toContain(
      `  runs    under tenax up (pid ${up.child.pid}), gateway pid ${gatewayPid}`,
    );
    expect(status.stdout).toContain(
      "  unit    none: systemd --user is not available here (no systemctl command on PATH)",
    );
    // Its address is the one up gave it (port 0), not config's.
    expect(status.stdout).toContain(`  health  ${up.url}/health/live answered ok`);
    expect(status.stdout).not.toContain("next:");
    expect(status.status).toBe(0);

    const json = await tenaxRun(home, ["gateway", "status", "--json"], noSystemd);
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: "ok",
      runs: { mode: "up", pid: gatewayPid, up_pid: up.child.pid },
      state: null,
      systemd: { available: false },
      live: { ok: true },
    });

    // A user manager that cannot be reached is no systemd either.
    const fake = fakeSystemd();
    fake.setState({ bus: false });
    const noBus = await tenaxRun(home, ["gateway", "status"], fakeEnvironment(fake, tempDir("tenax-xdg-")));
    expect(noBus.status).toBe(0);
    expect(noBus.stdout).toContain(
      "  unit    none: systemd --user is not available here (Failed to connect to bus",
    );
  });

  it("without systemd, says a gateway runs in the foreground as it was started, and exits 0", async () => {
    requireBuild();
    // Its configured port is one nothing serves, for the look once it has stopped (never 8642,
    // where another gateway of this machine may answer).
    const { home } = await simProfile(`port: ${await freePort()}`);
    const gateway = await startGateway(home, ["--port", "0"]);
    running.push(gateway);
    const status = await tenaxRun(home, ["gateway", "status"], { PATH: tempDir("tenax-empty-path-") });
    expect(status.stderr).toBe("");
    expect(status.stdout).toContain(
      `  runs    in the foreground (tenax gateway run --port 0), gateway pid ${gateway.child.pid}`,
    );
    expect(status.stdout).toContain(`  health  ${gateway.url}/health/live answered ok`);
    expect(status.status).toBe(0);

    // Once it has stopped: down, and how to start it again as it was started.
    gateway.child.kill("SIGTERM");
    expect(await gateway.exited).toBe(0);
    const down = await tenaxRun(home, ["gateway", "status"], { PATH: tempDir("tenax-empty-path-") });
    expect(down.stderr).toBe("");
    expect(down.stdout).toContain("gateway of profile 'default': down");
    expect(down.stdout).toContain("  runs    not running");
    expect(down.status).toBe(2);
  });
});

async function tenaxRun(home: string, args: string[], env: NodeJS.ProcessEnv) {
  return runAsync(process.execPath, [BIN, ...args], { env: cliEnvironment(home, env) });
}

/** The gateway's pid, from its pid file (under tenax up it is up's child, not the test's). */
function pidOf(home: string): number {
  return (JSON.parse(readFileSync(join(home, "gateway.pid"), "utf8")) as { pid: number }).pid;
}
