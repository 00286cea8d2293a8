import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { rejected, tempHome } from "../../test/helpers/temp-home.js";
import { profilePaths } from "../profile/paths.js";
import { initConfig } from "./init-config.js";
import { loadConfig } from "./load.js";
import { createProfile } from "./profiles.js";

const free = async () => true;

describe("initConfig", () => {
  it("creates TENAX_HOME and a valid commented config for the default profile", async () => {
    const home = join(tempHome(), "nested", "home");
    const paths = profilePaths(home, "default");
    const result = await initConfig(paths, { probe: free });
    expect(result).toMatchObject({
      replaced: false,
      backup_file: null,
      gateway_port: 8642,
      dashboard_port: 8080,
    });
    expect(statSync(home).mode & 0o777).toBe(0o700);
    expect(statSync(paths.config).mode & 0o777).toBe(0o600);
    expect(existsSync(paths.spool)).toBe(true);
    expect(loadConfig(paths, {}).config.gateway.port).toBe(8642);
  });

  it("refuses to overwrite without force, printing the command that would", async () => {
    const paths = profilePaths(tempHome(), "default");
    await initConfig(paths, { probe: free });
    const error = await rejected(() => initConfig(paths, { probe: free }));
    expect(error.code).toBe("config_exists");
    expect(error.hint).toContain("run: tenax init --force");
  });

  it("with force keeps a backup and the profile's ports", async () => {
    const home = tempHome();
    await createProfile(home, "dev", { probe: free });
    const paths = profilePaths(home, "dev");
    writeFileSync(paths.config, "gateway: { port: 9999 }\ndashboard: { port: 9998 }\n");
    const result = await initConfig(paths, { force: true, probe: free });
    expect(result).toMatchObject({ replaced: true, gateway_port: 9999, dashboard_port: 9998 });
    expect(readFileSync(join(paths.dir, "config.yaml.bak"), "utf8")).toContain("9999");
    expect(readFileSync(paths.config, "utf8")).toContain("# Tenax configuration");
  });

  it("with force moves a named profile off ports another profile uses", async () => {
    const home = tempHome();
    await createProfile(home, "dev", { probe: free });
    const paths = profilePaths(home, "dev");
    writeFileSync(paths.config, "retry: { max_attempts: 4 }\n");
    const result = await initConfig(paths, { force: true, probe: free });
    expect(result).toMatchObject({ gateway_port: 8643, dashboard_port: 8081 });
  });

  it("points a missing named profile at `tenax profile create`", async () => {
    const paths = profilePaths(tempHome(), "ghost");
    const error = await rejected(() => initConfig(paths, { probe: free }));
    expect(error.exitCode).toBe(2);
    expect(error.hint).toContain("tenax profile create ghost");
    expect(existsSync(paths.dir)).toBe(false);
  });
});
