import type { AddressInfo } from "node:net";
import { createServer } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { main } from "../main.js";

afterEach(() => {
  vi.restoreAllMocks();
});

function captureStdout(): string[] {
  const lines: string[] = [];
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return lines;
}

describe("tenax simulator", () => {
  it("serves on the printed URL until SIGTERM, then stops and exits 0", async () => {
    const printed = captureStdout();
    const running = main(["simulator", "--port", "0", "--model", "tiny=50"]);
    let url: string | undefined;
    for (let i = 0; i < 200 && !url; i++) {
      url = /listening at (\S+)/.exec(printed.join(""))?.[1];
      if (!url) await new Promise((r) => setTimeout(r, 5));
    }
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const models = (await (await fetch(`${url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(["tiny"]);

    process.emit("SIGTERM", "SIGTERM");
    expect(await running).toBe(0);
    expect(printed.join("")).toContain("simulator stopped (SIGTERM)");
    await expect(fetch(`${url}/models`)).rejects.toThrow();
  });

  it("refuses a bad port or model as a usage error", async () => {
    vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    expect(await main(["simulator", "--port", "70000"])).toBe(2);
    expect(await main(["simulator", "--port", "0", "--model", "tiny"])).toBe(2);
    expect(await main(["simulator"])).toBe(2);
  });

  it("names a port in use as such, not as a bug", async () => {
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as AddressInfo).port;
    const errors: string[] = [];
    vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      errors.push(String(chunk));
      return true;
    });
    try {
      expect(await main(["simulator", "--port", String(port)])).toBe(1);
    } finally {
      holder.close();
    }
    expect(errors.join("")).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(errors.join("")).not.toContain("a bug in Tenax");
  });
});
