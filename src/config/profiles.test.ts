// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rejected, tempHome, thrown } from "../../test/helpers/temp-home.js";
import { profilePaths } from "../profile/paths.js";
import { configuredPorts } from "../profile/ports.js";
import { createProfile, deleteProfile, listProfiles, showProfile } from "./profiles.js";

const free = async () => true;
const errno = (code: string) => Object.assign(new Error(code), { code });

describe("createProfile", () => {
  it("makes the folder, its sub-folders and a private config", async () => {
    const home = tempHome();
    const info = await createProfile(home, "dev", { probe: free });
    expect(info.dir).toBe(join(home, "profiles", "dev"));
    expect(statSync(info.dir).mode & 0o777).toBe(0o700);
    expect(statSync(info.config_file).mode & 0o777).toBe(0o600);
    for (const sub of ["spool", "logs", "cron"])
      expect(statSync(join(info.dir, sub)).isDirectory()).toBe(true);
    expect(readFileSync(info.config_file, "utf8")).toContain('profile "dev"');
  });

  it("gives three profiles distinct ports, skipping ports other profiles configure", async () => {
    const home = tempHome();
    const a = await createProfile(home, "a", { probe: free });
    mkdirSync(join(home, "profiles", "manual"));
    writeFileSync(join(home, "profiles", "manual", "config.yaml"), "gateway: { port: 8644 }\n");
    mkdirSync(join(home, "profiles", "broken"));
    writeFileSync(join(home, "profiles", "broken", "config.yaml"), "gateway: [unclosed\n");
    const b = await createProfile(home, "b", { probe: free });
    const c = await createProfile(home, "c", { probe: free });
    expect([a.gateway_port, a.dashboard_port]).toEqual([8643, 8081]);
    expect([b.gateway_port, b.dashboard_port]).toEqual([8645, 8083]);
    expect([c.gateway_port, c.dashboard_port]).toEqual([8646, 8084]);
    expect(configuredPorts(b.config_file)).toEqual({ gateway: 8645, dashboard: 8083 });
  });

  it("skips a port something is listening on", async () => {
    const home = tempHome();
    const first = await createProfile(home, "first");
    const next = (first.gateway_port ?? 0) + 1;
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(next, "127.0.0.1", () => resolve(true));
    });
    try {
      const second = await createProfile(home, "second");
      expect(second.gateway_port).not.toBe(next);
      expect(second.gateway_port).toBeGreaterThan(next);
      expect(second.dashboard_port).toBeGreaterThan(first.dashboard_port ?? 0);
    } finally {
      if (bound) await new Promise((resolve) => server.close(resolve));
    }
  });

  it("refuses an existing profile, the default profile and a bad name", async () => {
    const home = tempHome();
    await createProfile(home, "dev", { probe: free });
    expect((await rejected(() => createProfile(home, "dev", { probe: free }))).code).toBe("profile_exists");
    expect((await rejected(() => createProfile(home, "default", { probe: free }))).exitCode).toBe(2);
    expect((await rejected(() => createProfile(home, "../x", { probe: free }))).exitCode).toBe(2);
  });

  it.each([
    ["ENOSPC", "no space left", "df -h"],
    ["EACCES", "permission denied", "ls -ld"],
    ["EROFS", "read-only file system", "TENAX_HOME"],
  ])("on %s reports what to do and leaves no half-made profile", async (code, message, hint) => {
    const home = tempHome();
    const writeFile = async () => {
      throw errno(code);
    };
    const error = await rejected(() => createProfile(home, "dev", { probe: free, writeFile }));
    expect(error.message).toContain(message);
    expect(error.hint).toContain(hint);
    expect(readdirSync(join(home, "profiles"))).toEqual([]);
  });

  // root may write anywhere, so the read-only home check only means something for other users
  it.skipIf(process.getuid?.() === 0)("reports a TENAX_HOME it cannot write to", async () => {
    const home = tempHome();
    chmodSync(home, 0o500);
    try {
      const error = await rejected(() => createProfile(home, "dev", { probe: free }));
      expect(error.message).toContain("permission denied");
    } finally {
      chmodSync(home, 0o700);
    }
  });
});

describe("listProfiles", () => {
  it("always lists the default profile first, then valid profile folders by name", async () => {
    const home = tempHome();
    await createProfile(home, "zeta", { probe: free });
    await createProfile(home, "alpha", { probe: free });
    mkdirSync(join(home, "profiles", ".alpha.creating-x"));
    mkdirSync(join(home, "profiles", "Not Valid"));
    writeFileSync(join(home, "profiles", "file"), "");
    const list = listProfiles(home);
    expect(list.map((p) => p.name)).toEqual(["default", "alpha", "zeta"]);
    expect(list[0]).toMatchObject({ is_default: true, dir: home, config_exists: false, gateway_port: 8642 });
    expect(list[1]).toMatchObject({ config_exists: true, gateway_running: false, gateway_pid: null });
  });

  it("tells a live gateway from a stale pid file", async () => {
    const home = tempHome();
    await createProfile(home, "live", { probe: free });
    await createProfile(home, "stale", { probe: free });
    writeFileSync(profilePaths(home, "live").pid, `${process.pid}\n`);
    writeFileSync(profilePaths(home, "stale").pid, JSON.stringify({ pid: 2 ** 30 }));
    const byName = Object.fromEntries(listProfiles(home).map((p) => [p.name, p]));
    expect(byName.live).toMatchObject({ gateway_pid: process.pid, gateway_running: true });
    expect(byName.stale).toMatchObject({ gateway_pid: 2 ** 30, gateway_running: false });
  });
});

describe("showProfile", () => {
  it("shows the loaded config with secrets hidden", async () => {
    const home = tempHome();
    await createProfile(home, "dev", { probe: free });
    const paths = profilePaths(home, "dev");
    writeFileSync(paths.config, "gateway:\n  api_key: ${K}\n");
    writeFileSync(paths.env, "K=super-secret\n");
    const details = showProfile(home, "dev", {});
    expect(details.config?.gateway.api_key).toBe("***");
    expect(JSON.stringify(details)).not.toContain("super-secret");
    expect(details.uses_simulator).toBe(true);
    expect(details.env_exists).toBe(true);
  });

  it("reports a broken config instead of failing", async () => {
    const home = tempHome();
    await createProfile(home, "dev", { probe: free });
    writeFileSync(profilePaths(home, "dev").config, "retry: { max_attempts: 0 }\n");
    const details = showProfile(home, "dev", {});
    expect(details.config).toBeNull();
    expect(details.config_error?.message).toContain("retry.max_attempts");
    expect(details.config_error?.hint).toContain("tenax --profile dev init --force");
  });

  it("names the existing profiles when asked for a missing one", () => {
    const home = tempHome();
    const error = thrown(() => showProfile(home, "ghost", {}));
    expect(error.message).toContain('no profile named "ghost" (existing profiles: default)');
  });
});

describe("deleteProfile", () => {
  it("removes the profile folder", async () => {
    const home = tempHome();
    const info = await createProfile(home, "dev", { probe: free });
    await deleteProfile(home, "dev");
    expect(existsSync(info.dir)).toBe(false);
    expect(readdirSync(join(home, "profiles"))).toEqual([]);
  });

  it("refuses the default profile", async () => {
    const error = await rejected(() => deleteProfile(tempHome(), "default"));
    expect(error.exitCode).toBe(2);
    expect(error.message).toContain("cannot be deleted");
  });

  it("refuses a missing profile, naming those that exist", async () => {
    const home = tempHome();
    await createProfile(home, "one", { probe: free });
    const error = await rejected(() => deleteProfile(home, "two"));
    expect(error.message).toBe('no profile named "two" (existing profiles: default, one)');
  });

  it("refuses while the profile's gateway is running, naming its pid", async () => {
    const home = tempHome();
    const info = await createProfile(home, "busy", { probe: free });
    writeFileSync(profilePaths(home, "busy").pid, String(process.pid));
    const error = await rejected(() => deleteProfile(home, "busy"));
    expect(error.code).toBe("profile_busy");
    expect(error.message).toContain(`pid ${process.pid}`);
    expect(error.hint).toContain(`kill ${process.pid}`);
    expect(existsSync(info.dir)).toBe(true);
  });
});
