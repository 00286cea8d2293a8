// The service commands through the real `tenax` CLI (built dist/) as a child process, with the fake
// systemctl on its PATH. Runs once main.ts adds them to the gateway group.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, cliEnvironment, printedCommands, ROOT, requireBuild, runAsync } from "./helpers/cli.js";
import { type FakeHealth, fakeEnvironment, fakeHealthServer, fakeSystemd } from "./helpers/fake-systemd.js";
import { tempDir } from "./helpers/tmp.js";

const wired = readFileSync(join(ROOT, "src", "cli", "main.ts"), "utf8").includes(
  "registerGatewayServiceCommands",
);

const servers: FakeHealth[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
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

  it("exits 1 with what to run instead when there is no systemctl", async () => {
    requireBuild();
    const home = tempDir("tenax-home-");
    const env = {
      ...cliEnvironment(home),
      PATH: tempDir("tenax-empty-path-"),
      XDG_CONFIG_HOME: tempDir("tenax-xdg-"),
    };
    const run = await runAsync(process.execPath, [BIN, "gateway", "status"], { env });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("systemd --user is not available here");
    expect(run.stderr).toContain("tenax gateway run");
  });
});
