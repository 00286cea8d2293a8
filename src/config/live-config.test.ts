// The config a long-running process reads as config.yaml is edited: a file that does not load
// leaves the last good config (at first the defaults) in force with the error beside it, and the
// fixed file is picked up at the next look, without a restart.
import { writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { profileWith } from "../../test/helpers/temp-home.js";
import { LiveConfig } from "./live-config.js";
import { loadConfig } from "./load.js";

describe("LiveConfig", () => {
  it("keeps the last good config while the file is broken, says why, and picks up the fix", () => {
    const paths = profileWith("dashboard: { port: 0 }\ngateway: { port: 1, bogus: 2 }\n");
    const live = new LiveConfig(paths);
    expect(live.problem?.message).toContain(`${paths.config}:2: gateway.bogus: unknown key`);
    expect(live.current().gateway.port).toBe(8642);
    expect(live.lastLoaded).toBeNull();
    writeFileSync(paths.config, "gateway: { port: 9100 }\n");
    expect(live.current().gateway.port).toBe(9100);
    expect(live.problem).toBeNull();
    writeFileSync(paths.config, "gateway: { port: [nope }\n");
    expect(live.problem).not.toBeNull();
    expect(live.current().gateway.port).toBe(9100);
  });

  it("loads once while nothing changes", () => {
    const paths = profileWith("gateway: { port: 9101 }\n");
    let loads = 0;
    const live = new LiveConfig(paths, (p) => {
      loads++;
      return loadConfig(p);
    });
    for (let i = 0; i < 5; i++) live.current();
    expect(loads).toBe(1);
    writeFileSync(paths.env, "X=1\n");
    live.current();
    expect(loads).toBe(2);
  });
});
