import { describe, expect, it } from "vitest";
import { formatWindow } from "../../profile/up-state.js";
import { RestartPolicy } from "./restart-policy.js";

const killed = { code: null, signal: "SIGKILL" };

describe("RestartPolicy", () => {
  it("waits 1 s, then 2 s, and gives up at the third unclean exit within 5 minutes", () => {
    const policy = new RestartPolicy();
    expect(policy.decide(killed, 0)).toEqual({ action: "restart", delayMs: 1000, clean: false, unclean: 1 });
    expect(policy.decide({ code: 1, signal: null }, 10_000)).toEqual({
      action: "restart",
      delayMs: 2000,
      clean: false,
      unclean: 2,
    });
    expect(policy.decide(killed, 20_000)).toEqual({ action: "give_up", reason: "crash_loop", unclean: 3 });
  });

  it("forgets unclean exits older than the window, so a gateway that crashes now and then is always restarted", () => {
    const policy = new RestartPolicy();
    for (let i = 0; i < 10; i++) {
      const decision = policy.decide(killed, i * 200_000);
      expect(decision.action).toBe("restart");
    }
    expect(policy.count(10 * 200_000)).toBe(1);
  });

  it("doubles the wait up to the cap when more exits are allowed", () => {
    const policy = new RestartPolicy({
      maxUnclean: 10,
      windowMs: 60_000,
      baseDelayMs: 1000,
      maxDelayMs: 5000,
    });
    const delays = [0, 1, 2, 3, 4].map((i) => {
      const d = policy.decide(killed, i);
      return d.action === "restart" ? d.delayMs : -1;
    });
    expect(delays).toEqual([1000, 2000, 4000, 5000, 5000]);
  });

  it("restarts a clean exit at once without counting it, and never restarts a config error", () => {
    const policy = new RestartPolicy();
    policy.decide(killed, 0);
    policy.decide(killed, 1);
    expect(policy.decide({ code: 0, signal: null }, 2)).toEqual({
      action: "restart",
      delayMs: 0,
      clean: true,
      unclean: 2,
    });
    expect(policy.decide({ code: 78, signal: null }, 3)).toEqual({
      action: "give_up",
      reason: "config_error",
      unclean: 2,
    });
    // A usage error (exit 2) fails the same way every time: never restarted, and not counted.
    expect(policy.decide({ code: 2, signal: null }, 3)).toEqual({
      action: "give_up",
      reason: "config_error",
      unclean: 2,
    });
    policy.reset();
    expect(policy.decide(killed, 4)).toMatchObject({ action: "restart", delayMs: 1000 });
  });

  it("names its window", () => {
    expect(formatWindow(300_000)).toBe("5 min");
    expect(formatWindow(90_000)).toBe("90 s");
  });
});
