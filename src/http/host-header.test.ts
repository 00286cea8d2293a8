import { describe, expect, it } from "vitest";
import { hostAllowed, isLoopback, loopbackHostHeader, parseHostHeader } from "./host-header.js";

describe("Host headers", () => {
  it("knows loopback names and nothing that only looks like one", () => {
    for (const host of ["localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "[::1]"])
      expect(isLoopback(host), host).toBe(true);
    for (const host of ["127.0.0.1.evil.test", "localhost.evil.test", "0.0.0.0", "10.0.0.1", "::", "127.0.0"])
      expect(isLoopback(host), host).toBe(false);
  });

  it("parses a name and port, and refuses what is not a Host", () => {
    expect(parseHostHeader("Example.COM:8080")).toEqual({ name: "example.com", port: 8080 });
    expect(parseHostHeader("[::1]:1")).toEqual({ name: "::1", port: 1 });
    expect(parseHostHeader("127.0.0.1")).toEqual({ name: "127.0.0.1", port: null });
    for (const bad of [undefined, "", "a b", "evil.test:99999", "evil.test:x", "user@evil.test", "[::1"])
      expect(parseHostHeader(bad), String(bad)).toBeNull();
    expect(loopbackHostHeader("localhost:3000")).toBe(true);
    expect(loopbackHostHeader("evil.example")).toBe(false);
  });

  it("allows loopback on any port, a bound name only with the bound port, an extra name on any", () => {
    const policy = { bound: () => ["192.0.2.7"], port: 8642, extra: ["gw.example.lan"] };
    expect(hostAllowed("127.0.0.1:9", policy)).toBe(true);
    expect(hostAllowed("192.0.2.7:8642", policy)).toBe(true);
    expect(hostAllowed("192.0.2.7:8643", policy)).toBe(false);
    expect(hostAllowed("192.0.2.7", policy)).toBe(false);
    expect(hostAllowed("GW.example.lan:443", policy)).toBe(true);
    expect(hostAllowed("attacker.test:8642", policy)).toBe(false);
    // Not listening yet: loopback only.
    expect(hostAllowed("192.0.2.7:8642", { ...policy, port: null })).toBe(false);
    expect(hostAllowed("192.0.2.7:80", { ...policy, port: 80 })).toBe(true);
    expect(hostAllowed("192.0.2.7", { ...policy, port: 80 })).toBe(true);
  });
});
