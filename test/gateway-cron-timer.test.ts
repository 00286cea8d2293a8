// `tenax gateway install --cron-timer` and `tenax gateway uninstall` with the cron timer, against a
// fake systemctl on PATH (see helpers/gateway-service.ts).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN } from "./helpers/cli.js";
import { closeServers, setup, systemctlCalls } from "./helpers/gateway-service.js";

afterEach(closeServers);

describe("tenax gateway install --cron-timer", () => {
  it("writes the gateway unit, the timer and its service, reloads once, enables both and starts the timer", async () => {
    const s = await setup();
    const run = await s.run(["gateway", "install", "--cron-timer"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(existsSync(s.unitFile())).toBe(true);
    const timer = readFileSync(s.unitFile("tenax-cron.timer"), "utf8");
    expect(timer).toContain("\nOnCalendar=*-*-* *:*:00\n");
    expect(timer).toContain("\nUnit=tenax-cron.service\n");
    const service = readFileSync(s.unitFile("tenax-cron.service"), "utf8");
    expect(service).toContain(`\nExecStart=${process.execPath} ${BIN} cron tick\n`);
    expect(service).toContain(`\nEnvironment=TENAX_HOME=${s.home}\n`);
    expect(service).toContain(`\nWorkingDirectory=${s.home}\n`);
    expect(systemctlCalls(s.fake)).toEqual([
      "--user show -p Version",
      "--user daemon-reload",
      "--user enable tenax-gateway.service",
      "--user enable tenax-cron.timer",
      "--user start tenax-cron.timer",
    ]);
    expect(s.fake.state().units["tenax-cron.timer"]?.ActiveState).toBe("active");
    expect(run.stdout).toContain(`wrote ${s.unitFile("tenax-cron.timer")}`);
    expect(run.stdout).toContain(`wrote ${s.unitFile("tenax-cron.service")}`);
    expect(run.stdout).toContain(
      "enabled and started tenax-cron.timer: it runs tenax cron tick every minute",
    );
    expect(run.stdout).toContain("systemctl --user list-timers tenax-cron.timer");
  });

  it("without the flag writes no timer", async () => {
    const s = await setup();
    expect((await s.run(["gateway", "install"])).status).toBe(0);
    expect(existsSync(s.unitFile("tenax-cron.timer"))).toBe(false);
    expect(existsSync(s.unitFile("tenax-cron.service"))).toBe(false);
  });

  it("names a profile's timer after it and ticks that profile", async () => {
    const s = await setup();
    const run = await s.run(["--profile", "work", "gateway", "install", "--cron-timer", "--json"]);
    expect(run.status).toBe(0);
    const doc = JSON.parse(run.stdout) as {
      unit: string;
      cron_timer: { timer: { unit: string; path: string; outcome: string }; service: { unit: string } };
    };
    expect(doc.unit).toBe("tenax-gateway-work.service");
    expect(doc.cron_timer.timer).toEqual({
      unit: "tenax-cron-work.timer",
      path: s.unitFile("tenax-cron-work.timer"),
      outcome: "created",
    });
    expect(doc.cron_timer.service.unit).toBe("tenax-cron-work.service");
    expect(readFileSync(s.unitFile("tenax-cron-work.timer"), "utf8")).toContain(
      "\nUnit=tenax-cron-work.service\n",
    );
    const service = readFileSync(s.unitFile("tenax-cron-work.service"), "utf8");
    expect(service).toContain(`\nExecStart=${process.execPath} ${BIN} --profile work cron tick\n`);
    expect(service).toContain(`\nWorkingDirectory=${join(s.home, "profiles", "work")}\n`);
    expect(existsSync(s.unitFile("tenax-cron.timer"))).toBe(false);
    expect(systemctlCalls(s.fake)).toContain("--user start tenax-cron-work.timer");
  });

  it("refuses a different timer file without --force and writes nothing, then replaces it with --force", async () => {
    const s = await setup();
    expect((await s.run(["gateway", "install", "--cron-timer"])).status).toBe(0);
    const written = readFileSync(s.unitFile("tenax-cron.timer"), "utf8");
    writeFileSync(s.unitFile("tenax-cron.timer"), "[Timer]\nOnCalendar=hourly\n");
    const gatewayBefore = readFileSync(s.unitFile(), "utf8");
    writeFileSync(s.unitFile(), `${gatewayBefore}# edited\n`);
    const callsBefore = systemctlCalls(s.fake).length;

    const refused = await s.run(["gateway", "install", "--cron-timer"]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(`${s.unitFile()} already exists with different content`);
    expect(refused.stderr).toContain("tenax gateway install --cron-timer --force");
    expect(readFileSync(s.unitFile("tenax-cron.timer"), "utf8")).toContain("OnCalendar=hourly");
    expect(systemctlCalls(s.fake).slice(callsBefore)).toEqual(["--user show -p Version"]);

    // Only the timer differs now: still refused, and the gateway unit is not touched either.
    writeFileSync(s.unitFile(), gatewayBefore);
    const refusedTimer = await s.run(["gateway", "install", "--cron-timer"]);
    expect(refusedTimer.status).toBe(1);
    expect(refusedTimer.stderr).toContain(
      `${s.unitFile("tenax-cron.timer")} already exists with different content`,
    );

    const forced = await s.run(["gateway", "install", "--cron-timer", "--force"]);
    expect(forced.status).toBe(0);
    expect(forced.stdout).toContain(`replaced ${s.unitFile("tenax-cron.timer")}`);
    expect(forced.stdout).toContain(`already up to date: ${s.unitFile("tenax-cron.service")}`);
    expect(readFileSync(s.unitFile("tenax-cron.timer"), "utf8")).toBe(written);
  });
});

describe("tenax gateway uninstall with a cron timer", () => {
  it("stops and disables the timer and its service too, removes all three files and reloads once", async () => {
    const s = await setup();
    await s.run(["gateway", "install", "--cron-timer"]);
    await s.run(["gateway", "start"]);
    const callsBefore = systemctlCalls(s.fake).length;
    const run = await s.run(["gateway", "uninstall", "--json"]);
    expect(run.status).toBe(0);
    expect(systemctlCalls(s.fake).slice(callsBefore)).toEqual([
      "--user stop tenax-gateway.service",
      "--user disable tenax-gateway.service",
      "--user stop tenax-cron.timer",
      "--user disable tenax-cron.timer",
      "--user stop tenax-cron.service",
      "--user disable tenax-cron.service",
      "--user daemon-reload",
    ]);
    for (const name of ["tenax-gateway.service", "tenax-cron.timer", "tenax-cron.service"]) {
      expect(existsSync(s.unitFile(name))).toBe(false);
      expect(s.fake.state().units[name]?.LoadState).toBe("not-found");
    }
    const doc = JSON.parse(run.stdout) as { cron_timer: { timer: { removed: boolean } } | null };
    expect(doc.cron_timer?.timer.removed).toBe(true);
  });

  it("leaves a profile's timer alone when uninstalling another profile", async () => {
    const s = await setup();
    await s.run(["--profile", "work", "gateway", "install", "--cron-timer"]);
    await s.run(["gateway", "install"]);
    const run = await s.run(["gateway", "uninstall"]);
    expect(run.status).toBe(0);
    expect(run.stdout).not.toContain("tenax-cron");
    expect(existsSync(s.unitFile("tenax-cron-work.timer"))).toBe(true);
    const removed = await s.run(["--profile", "work", "gateway", "uninstall"]);
    expect(removed.stdout).toContain(`removed ${s.unitFile("tenax-cron-work.timer")}`);
    expect(existsSync(s.unitFile("tenax-cron-work.service"))).toBe(false);
  });
});
