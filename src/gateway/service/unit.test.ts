import { describe, expect, it } from "vitest";
import { profilePaths } from "../../profile/paths.js";
import { quoteArg, renderUnit, unitDirectory, unitName } from "./unit.js";

describe("the gateway unit", () => {
  it("is named after the profile", () => {
    expect(unitName("default")).toBe("tenax-gateway.service");
    expect(unitName("work-2")).toBe("tenax-gateway-work-2.service");
  });

  it("lives under an absolute XDG_CONFIG_HOME, else ~/.config", () => {
    expect(unitDirectory({ XDG_CONFIG_HOME: "/x/cfg", HOME: "/h" })).toBe("/x/cfg/systemd/user");
    expect(unitDirectory({ XDG_CONFIG_HOME: "relative", HOME: "/h" })).toBe("/h/.config/systemd/user");
    expect(unitDirectory({ HOME: "/h" })).toBe("/h/.config/systemd/user");
  });

  it("quotes words systemd would split or expand", () => {
    expect(quoteArg("/usr/bin/node")).toBe("/usr/bin/node");
    expect(quoteArg("/opt/my tenax/bin/tenax.js")).toBe('"/opt/my tenax/bin/tenax.js"');
    expect(quoteArg('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(quoteArg("/srv/100%/$HOME")).toBe("/srv/100%%/$$HOME");
    expect(quoteArg("TENAX_HOME=/srv/$x", false)).toBe("TENAX_HOME=/srv/$x");
  });

  it("runs this node and bin with TENAX_HOME, quoted where paths have spaces", () => {
    const paths = profilePaths("/home/me/tenax home", "ops");
    const text = renderUnit({
      paths,
      drainTimeoutS: 2.5,
      nodePath: "/usr/bin/node",
      binPath: "/opt/t x/bin/tenax.js",
    });
    expect(text).toContain('\nExecStart=/usr/bin/node "/opt/t x/bin/tenax.js" --profile ops gateway run\n');
    expect(text).toContain('\nEnvironment="TENAX_HOME=/home/me/tenax home"\n');
    expect(text).toContain("\nWorkingDirectory=/home/me/tenax home/profiles/ops\n");
    expect(text).toContain("\nTimeoutStopSec=18\n");
    // A config error (78) and a usage error (2) fail the same way on every start.
    expect(text).toContain("\nRestartPreventExitStatus=2 78\n");
  });
});
