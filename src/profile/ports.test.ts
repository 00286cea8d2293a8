// biome-ignore-all lint/suspicious/noTemplateCurlyInString: these tests write literal ${VAR} references on purpose
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempHome } from "../../test/helpers/temp-home.js";
import { allocatePorts, configuredPorts, probeLoopbackPort } from "./ports.js";

describe("configuredPorts", () => {
  it("reads the ports, with defaults for a missing file or key and null for a broken one", () => {
    const dir = tempHome();
    const file = join(dir, "config.yaml");
    expect(configuredPorts(file)).toEqual({ gateway: 8642, dashboard: 8080 });
    writeFileSync(file, "gateway: { port: 9001 }\n");
    expect(configuredPorts(file)).toEqual({ gateway: 9001, dashboard: 8080 });
    writeFileSync(file, "gateway: { port: ${P} }\ndashboard: { port: 7 }\n");
    expect(configuredPorts(file)).toEqual({ gateway: null, dashboard: null });
    writeFileSync(file, 'gateway:\n  port: "${P}"\ndashboard:\n  port: 7\n');
    expect(configuredPorts(file)).toEqual({ gateway: null, dashboard: 7 });
  });
});

describe("allocatePorts", () => {
  it("takes the lowest pair above the defaults that is neither taken nor busy", async () => {
    const free = async () => true;
    expect(await allocatePorts(new Set([8642, 8080]), free)).toEqual({ gateway: 8643, dashboard: 8081 });
    expect(await allocatePorts(new Set([8643]), free)).toEqual({ gateway: 8644, dashboard: 8082 });
    expect(await allocatePorts(new Set([8082]), free)).toEqual({ gateway: 8643, dashboard: 8081 });
    const busy = new Set([8081, 8644]);
    expect(await allocatePorts(new Set(), async (p) => !busy.has(p))).toEqual({
      gateway: 8645,
      dashboard: 8083,
    });
  });
});

describe("probeLoopbackPort", () => {
  it("sees a port that a server listens on as busy", async () => {
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    try {
      expect(await probeLoopbackPort(address.port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await probeLoopbackPort(address.port)).toBe(true);
  });
});
