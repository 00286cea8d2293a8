// `tenax gateway install|uninstall|start|stop|restart|status` against a fake systemctl and
// journalctl on PATH and a real HTTP server standing in for the gateway's /health/live. The
// commands run in-process on a small program built like the real one (the gateway group is
// wired into main.ts separately); systemctl runs as a real child process through PATH.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { GATEWAY_EXIT_CONFIG_ERROR } from "../src/gateway/service/exit-codes.js";
import { BIN } from "./helpers/cli.js";
import { closeServers, setup, systemctlCalls } from "./helpers/gateway-service.js";
import { tempDir } from "./helpers/tmp.js";

afterEach(closeServers);

describe("tenax gateway install / uninstall", () => {
  it("writes the unit with the right ExecStart, restart policy and stop timeout, then reloads and enables it", async () => {
    const s = await setup({ drain: 30 });
    const run = await s.run(["gateway", "install"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const unit = readFileSync(s.unitFile(), "utf8");
    expect(unit).toContain(`\nExecStart=${process.execPath} ${BIN} gateway run\n`);
    expect(unit).toContain("\nRestart=on-failure\n");
    expect(GATEWAY_EXIT_CONFIG_ERROR).toBe(78);
    expect(unit).toContain("\nRestartPreventExitStatus=2 78\n");
    expect(unit).toContain(`\nEnvironment=TENAX_HOME=${s.home}\n`);
    expect(unit).toContain(`\nWorkingDirectory=${s.home}\n`);
    expect(unit).toContain("\nTimeoutStopSec=45\n");
    expect(unit).toContain("\nWantedBy=default.target\n");
    expect(systemctlCalls(s.fake)).toEqual([
      "--user show -p Version",
      "--user daemon-reload",
      "--user enable tenax-gateway.service",
    ]);
    expect(run.stdout).toContain(`wrote ${s.unitFile()}`);
    expect(run.stdout).toContain("daemon-reload and enable tenax-gateway.service");
  });

  it("names a profile's unit after it and passes --profile to the gateway", async () => {
    const s = await setup({ drain: 5 });
    const run = await s.run(["--profile", "work", "gateway", "install"]);
    expect(run.status).toBe(0);
    const unit = readFileSync(s.unitFile("tenax-gateway-work.service"), "utf8");
    expect(unit).toContain(`\nExecStart=${process.execPath} ${BIN} --profile work gateway run\n`);
    expect(unit).toContain(`\nWorkingDirectory=${join(s.home, "profiles", "work")}\n`);
    expect(unit).toContain("\nTimeoutStopSec=20\n");
    expect(existsSync(s.unitFile())).toBe(false);
    expect(systemctlCalls(s.fake)).toContain("--user enable tenax-gateway-work.service");
  });

  it("is idempotent, and replaces a different unit only with --force", async () => {
    const s = await setup();
    expect((await s.run(["gateway", "install"])).status).toBe(0);
    const written = readFileSync(s.unitFile(), "utf8");
    const again = await s.run(["gateway", "install"]);
    expect(again.status).toBe(0);
    expect(again.stdout).toContain("already up to date");
    expect(readFileSync(s.unitFile(), "utf8")).toBe(written);

    writeFileSync(s.unitFile(), "[Service]\nExecStart=/bin/something-else\n");
    const refused = await s.run(["gateway", "install"]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain("already exists with different content");
    expect(refused.stderr).toContain("tenax gateway install --force");
    expect(readFileSync(s.unitFile(), "utf8")).toContain("something-else");

    const forced = await s.run(["gateway", "install", "--force"]);
    expect(forced.status).toBe(0);
    expect(forced.stdout).toContain(`replaced ${s.unitFile()}`);
    expect(readFileSync(s.unitFile(), "utf8")).toBe(written);
  });

  it("uninstall stops, disables, removes the file and reloads", async () => {
    const s = await setup();
    await s.run(["gateway", "install"]);
    await s.run(["gateway", "start"]);
    expect(s.fake.state().units["tenax-gateway.service"]?.ActiveState).toBe("active");
    const run = await s.run(["gateway", "uninstall"]);
    expect(run.status).toBe(0);
    expect(existsSync(s.unitFile())).toBe(false);
    expect(systemctlCalls(s.fake).slice(-3)).toEqual([
      "--user stop tenax-gateway.service",
      "--user disable tenax-gateway.service",
      "--user daemon-reload",
    ]);
    expect(s.fake.state().units["tenax-gateway.service"]?.LoadState).toBe("not-found");
    expect(run.stdout).toContain(`removed ${s.unitFile()}`);
  });
});

describe("tenax gateway start / stop / status", () => {
  it("exits 0 when the unit runs and /health/live answers", async () => {
    const s = await setup({ healthy: true });
    await s.run(["gateway", "install"]);
    const start = await s.run(["gateway", "start"]);
    expect(start.status).toBe(0);
    expect(systemctlCalls(s.fake)).toContain("--user start tenax-gateway.service");
    const status = await s.run(["gateway", "status"]);
    expect(status.stderr).toBe("");
    expect(status.status).toBe(0);
    expect(status.stdout).toContain("gateway of profile 'default': ok");
    expect(status.stdout).toContain("active (running)");
    expect(s.health.hits).toBeGreaterThan(0);
    expect(systemctlCalls(s.fake)).toContain(
      "--user show tenax-gateway.service -p LoadState,ActiveState,SubState,MainPID,NRestarts,ExecMainStatus",
    );
  });

  it("exits 1 when the unit is active but /health/live fails", async () => {
    const s = await setup({ healthy: false });
    await s.run(["gateway", "install"]);
    await s.run(["gateway", "start"]);
    const status = await s.run(["gateway", "status", "--json"]);
    expect(status.status).toBe(1);
    const doc = JSON.parse(status.stdout) as { status: string; live: { ok: boolean } };
    expect(doc.status).toBe("degraded");
    expect(doc.live.ok).toBe(false);
  });

  it("exits 2 when the unit is inactive and nothing answers, and says to start it", async () => {
    const s = await setup({ healthy: false });
    await s.run(["gateway", "install"]);
    await s.run(["gateway", "start"]);
    const stop = await s.run(["gateway", "stop"]);
    expect(stop.status).toBe(0);
    const status = await s.run(["gateway", "status"]);
    expect(status.status).toBe(2);
    expect(status.stdout).toContain("gateway of profile 'default': down");
    expect(status.stdout).toContain("inactive (dead)");
    expect(status.stdout).toContain("next: tenax gateway start");
  });

  it("is degraded when a gateway answers but the unit is not running it", async () => {
    const s = await setup({ healthy: true });
    await s.run(["gateway", "install"]);
    const status = await s.run(["gateway", "status"]);
    expect(status.status).toBe(1);
    expect(status.stdout).toContain("a gateway answers, but not from tenax-gateway.service");
  });

  it("status of a unit that is not installed is down and says to install it", async () => {
    const s = await setup({ healthy: false });
    const status = await s.run(["--profile", "work", "gateway", "status"]);
    expect(status.status).toBe(2);
    expect(status.stdout).toContain("tenax-gateway-work.service is not installed");
    expect(status.stdout).toContain("next: tenax --profile work gateway install");
    const start = await s.run(["--profile", "work", "gateway", "start"]);
    expect(start.status).toBe(1);
    expect(start.stderr).toContain("Install it with: tenax --profile work gateway install");
  });
});

describe("tenax gateway restart", () => {
  it("succeeds once the unit is active, /health/live answers and the process stays up", async () => {
    const s = await setup({ healthy: true });
    await s.run(["gateway", "install"]);
    await s.run(["gateway", "start"]);
    const run = await s.run(["gateway", "restart", "--settle", "0.3"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/restarted tenax-gateway\.service: pid \d+ is up/);
    expect(systemctlCalls(s.fake).filter((c) => c.includes(" restart "))).toEqual([
      "--user restart tenax-gateway.service",
    ]);
    // It watched for the settle period rather than taking the first answer.
    expect(
      systemctlCalls(s.fake).filter((c) => c.startsWith("--user show tenax-gateway")).length,
    ).toBeGreaterThan(2);
  });

  it("retries once when the process keeps dying, then prints the commands that show why", async () => {
    const s = await setup({ healthy: true });
    await s.run(["gateway", "install"]);
    await s.run(["gateway", "start"]);
    s.fake.setState({ crashloop: true });
    const run = await s.run(["gateway", "restart", "--settle", "0.3", "--timeout", "3"]);
    expect(run.status).toBe(1);
    expect(systemctlCalls(s.fake).filter((c) => c.includes(" restart "))).toHaveLength(2);
    expect(run.stdout).toContain("retrying once");
    expect(run.stderr).toContain("did not stay up");
    const printed = run.stderr
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => /^(journalctl|systemctl) /.test(l));
    expect(printed).toEqual([
      "journalctl --user -u tenax-gateway.service -n 50 --no-pager",
      "systemctl --user status tenax-gateway.service",
    ]);
    // Each runs as printed through a shell, and the tools get exactly those arguments.
    for (const command of printed) {
      const before = s.fake.calls().length;
      const result = spawnSync("sh", ["-c", command], { env: s.env, encoding: "utf8" });
      expect(result.stderr).toBe("");
      expect(result.status).toBe(0);
      const call = s.fake.calls()[before];
      expect(call && [call.tool, ...call.args].join(" ")).toBe(command);
    }
  });

  it("gives up after the deadline when /health/live never answers, twice", async () => {
    const s = await setup({ healthy: false });
    await s.run(["gateway", "install"]);
    const run = await s.run(["gateway", "restart", "--timeout", "0.5", "--settle", "0.1"]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("not healthy within 0.5 s");
    expect(run.stderr).toContain("journalctl --user -u tenax-gateway.service -n 50 --no-pager");
    expect(systemctlCalls(s.fake).filter((c) => c.includes(" restart "))).toHaveLength(2);
  });

  it("does not retry a gateway that exits with the configuration error code, and says to check the config", async () => {
    const s = await setup({ healthy: false });
    await s.run(["--profile", "work", "gateway", "install"]);
    s.fake.setState({
      afterStart: { ActiveState: "failed", SubState: "failed", MainPID: 0, ExecMainStatus: 78 },
    });
    const run = await s.run(["--profile", "work", "gateway", "restart"]);
    expect(run.status).toBe(1);
    expect(systemctlCalls(s.fake).filter((c) => c.includes(" restart "))).toHaveLength(1);
    expect(run.stderr).toContain("after one restart: the gateway exited with 78: its configuration is wrong");
    expect(run.stderr).toContain("journalctl --user -u tenax-gateway-work.service -n 50 --no-pager");
    expect(run.stderr).toContain("Check the configuration with: tenax --profile work doctor");
    const status = await s.run(["--profile", "work", "gateway", "status"]);
    expect(status.status).toBe(2);
    expect(status.stdout).toContain("a configuration error, so systemd did not restart it");
    expect(status.stdout).toContain("next: tenax --profile work doctor");
  });

  it("rejects a bad --timeout as a usage error", async () => {
    const s = await setup();
    const run = await s.run(["gateway", "restart", "--timeout", "soon"]);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain("--timeout expects a number of seconds");
  });
});

describe("without systemd", () => {
  it("says systemctl is missing and what to run instead, and writes nothing", async () => {
    const s = await setup();
    const env = { ...s.env, PATH: tempDir("tenax-empty-path-") };
    for (const args of [
      ["gateway", "install"],
      ["gateway", "restart"],
    ]) {
      const run = await s.run(args, env);
      expect(run.status).toBe(1);
      expect(run.stderr).toContain("systemd --user is not available here (no systemctl command on PATH)");
      expect(run.stderr).toContain("tenax gateway run");
      expect(run.stderr).toContain("loginctl enable-linger");
    }
    expect(existsSync(s.unitFile())).toBe(false);
  });

  it("status needs no systemd: with nothing running it is down, says why there is no unit, and what to run", async () => {
    const s = await setup({ healthy: false });
    const run = await s.run(["gateway", "status"], { ...s.env, PATH: tempDir("tenax-empty-path-") });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(2);
    expect(run.stdout).toContain("gateway of profile 'default': down");
    expect(run.stdout).toContain("  runs    not running");
    expect(run.stdout).toContain(
      "  unit    none: systemd --user is not available here (no systemctl command on PATH)",
    );
    expect(run.stdout).toContain("next: tenax up (or tenax gateway run in the foreground)");
  });

  it("says so when systemctl cannot reach the user bus", async () => {
    const s = await setup();
    s.fake.setState({ bus: false });
    const run = await s.run(["gateway", "install"]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("systemd --user is not available here (Failed to connect to bus");
    expect(run.stderr).toContain("tenax gateway run");
    expect(existsSync(s.unitFile())).toBe(false);
  });
});
