import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type Run, requireBuild, runPrinted, tenax } from "./helpers/cli.js";
import { tempHome } from "./helpers/temp-home.js";

/** Run the command a hint printed after "run: ", through a shell, with `tenax` meaning this CLI. */
function runPrintedAfterRun(home: string, stderr: string): Run {
  const command = /run: (tenax .*)$/m.exec(stderr)?.[1];
  if (!command) throw new Error(`no command printed in: ${stderr}`);
  return runPrinted(home, command);
}

beforeAll(requireBuild);

describe("tenax profile", () => {
  it("creates profiles with distinct ports and lists them as one JSON document", () => {
    const home = tempHome();
    for (const name of ["a", "b", "c"]) {
      const created = tenax(home, ["profile", "create", name, "--json"]);
      expect(created.status).toBe(0);
      expect(JSON.parse(created.stdout).profile.name).toBe(name);
    }
    const list = tenax(home, ["profile", "list", "--json"]);
    expect(list.status).toBe(0);
    const profiles = JSON.parse(list.stdout).profiles as Array<{
      name: string;
      gateway_port: number;
      dashboard_port: number;
    }>;
    expect(profiles.map((p) => p.name)).toEqual(["default", "a", "b", "c"]);
    const ports = profiles.flatMap((p) => [p.gateway_port, p.dashboard_port]);
    expect(new Set(ports).size).toBe(8);
    expect(profiles[0]).toMatchObject({ gateway_port: 8642, dashboard_port: 8080 });
  });

  it("prints a table for people", () => {
    const home = tempHome();
    tenax(home, ["profile", "create", "dev"]);
    const list = tenax(home, ["profile", "list"]);
    expect(list.stdout).toMatch(/^\s+PROFILE\s+GATEWAY/);
    expect(list.stdout).toContain(join(home, "profiles", "dev"));
  });

  it("refuses to create a profile twice", () => {
    const home = tempHome();
    expect(tenax(home, ["profile", "create", "dev"]).status).toBe(0);
    const again = tenax(home, ["profile", "create", "dev"]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("already exists");
  });

  it("asks for --yes before deleting, and the printed command works", () => {
    const home = tempHome();
    tenax(home, ["profile", "create", "dev"]);
    const refused = tenax(home, ["profile", "delete", "dev"]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain("run: tenax profile delete dev --yes");
    expect(existsSync(join(home, "profiles", "dev"))).toBe(true);
    const confirmed = runPrintedAfterRun(home, refused.stderr);
    expect(confirmed.status).toBe(0);
    expect(existsSync(join(home, "profiles", "dev"))).toBe(false);
  });

  it("refuses to delete the default profile or a missing one", () => {
    const home = tempHome();
    expect(tenax(home, ["profile", "delete", "default", "--yes"]).status).toBe(2);
    const missing = tenax(home, ["profile", "delete", "ghost", "--yes", "--json"]);
    expect(missing.status).toBe(2);
    expect(JSON.parse(missing.stdout).error.message).toContain("existing profiles: default");
  });

  it("shows a broken config with exit 1 and the command that starts over", () => {
    const home = tempHome();
    tenax(home, ["profile", "create", "dev"]);
    writeFileSync(join(home, "profiles", "dev", "config.yaml"), "retry: { max_attempts: many }\n");
    const shown = tenax(home, ["profile", "show", "dev", "--json"]);
    expect(shown.status).toBe(1);
    const details = JSON.parse(shown.stdout).profile;
    expect(details.config_error.message).toContain(
      'retry.max_attempts: expected an integer from 1 to 20, got "many"',
    );
    expect(details.config_error.hint).toContain("tenax --profile dev init --force");
  });
});

describe("tenax init", () => {
  it("writes the default config, refuses a second time, and --force as printed replaces it", () => {
    const home = join(tempHome(), "home");
    const first = tenax(home, ["init", "--json"]);
    expect(first.status).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      profile: "default",
      gateway_port: 8642,
      replaced: false,
    });
    const second = tenax(home, ["init"]);
    expect(second.status).toBe(1);
    expect(second.stderr).toContain("run: tenax init --force");
    const forced = runPrintedAfterRun(home, second.stderr);
    expect(forced.status).toBe(0);
    expect(existsSync(join(home, "config.yaml.bak"))).toBe(true);
  });

  it("sends a missing named profile to `tenax profile create`", () => {
    const home = tempHome();
    const result = tenax(home, ["--profile", "work", "init"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("tenax profile create work");
    expect(tenax(home, ["profile", "create", "work"]).status).toBe(0);
    const again = tenax(home, ["--profile", "work", "init"]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain("run: tenax --profile work init --force");
    expect(runPrintedAfterRun(home, again.stderr).status).toBe(0);
  });
});
