import { describe, expect, it } from "vitest";
import { profilePaths } from "../../profile/paths.js";
import { cronTimerNames, renderCronService, renderCronTimer, tickTimeoutS } from "./cron-timer.js";

describe("the cron timer units", () => {
  it("are named after the profile", () => {
    expect(cronTimerNames("default")).toEqual({ service: "tenax-cron.service", timer: "tenax-cron.timer" });
    expect(cronTimerNames("work-2")).toEqual({
      service: "tenax-cron-work-2.service",
      timer: "tenax-cron-work-2.timer",
    });
  });

  it("the service ticks once with this node and bin, TENAX_HOME and the profile, quoted", () => {
    const paths = profilePaths("/home/me/tenax home", "ops");
    const text = renderCronService({
      paths,
      defaultTimeoutS: 600,
      nodePath: "/usr/bin/node",
      binPath: "/opt/t x/bin/tenax.js",
    });
    expect(text).toContain("\nType=oneshot\n");
    expect(text).toContain('\nExecStart=/usr/bin/node "/opt/t x/bin/tenax.js" --profile ops cron tick\n');
    expect(text).toContain('\nEnvironment="TENAX_HOME=/home/me/tenax home"\n');
    expect(text).toContain("\nUnsetEnvironment=TENAX_PROFILE\n");
    expect(text).toContain("\nWorkingDirectory=/home/me/tenax home/profiles/ops\n");
    expect(text).toContain("\nTimeoutStartSec=3600\n");
    // The timer starts it; enabled on its own it would run once at login.
    expect(text).not.toContain("[Install]");
  });

  it("the default profile's service passes no --profile, and escapes % in paths", () => {
    const text = renderCronService({
      paths: profilePaths("/srv/100%", "default"),
      defaultTimeoutS: 600,
      nodePath: "/usr/bin/node",
      binPath: "/opt/tenax/bin/tenax.js",
    });
    expect(text).toContain("\nExecStart=/usr/bin/node /opt/tenax/bin/tenax.js cron tick\n");
    expect(text).toContain("\nWorkingDirectory=/srv/100%%\n");
  });

  it("gives a tick at least an hour, more when the default run timeout is longer", () => {
    expect(tickTimeoutS(600)).toBe(3600);
    expect(tickTimeoutS(7200)).toBe(7500);
  });

  it("the timer fires every minute on the minute, without catch-up, and starts its service", () => {
    const text = renderCronTimer("ops");
    expect(text).toContain("\nOnCalendar=*-*-* *:*:00\n");
    expect(text).toContain("\nAccuracySec=1s\n");
    expect(text).toContain("\nPersistent=false\n");
    expect(text).toContain("\nUnit=tenax-cron-ops.service\n");
    expect(text).toContain("\n[Install]\nWantedBy=timers.target\n");
    expect(renderCronTimer("default")).toContain("\nUnit=tenax-cron.service\n");
  });
});
