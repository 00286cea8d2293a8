import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { defaultFetch, isConnectTimeout } from "./default-fetch.js";

let server: http.Server | undefined;

afterEach(async () => {
  const s = server;
  server = undefined;
  if (s === undefined) return;
  s.closeAllConnections();
  await new Promise((resolve) => s.close(resolve));
});

/** A server that answers every request and counts the connections it was asked on. */
async function countingServer(): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  const s = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => res.end(`${req.method} ${req.url}`));
  });
  s.on("connection", () => {
    connections++;
  });
  server = s;
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, connections: () => connections };
}

describe("defaultFetch", () => {
  it("keeps one pool per connect limit, so calls reuse a connection", async () => {
    const s = await countingServer();
    // Limits no other test uses, so the pools start empty. A call that follows the last one's body
    // at once may find that connection not yet back in the pool (global fetch does the same), so
    // six calls may take two connections, never six.
    const fetches = [defaultFetch(4_321), defaultFetch(4_321), defaultFetch(4_321)];
    for (const fetch of [...fetches, ...fetches]) {
      const response = await fetch(`${s.url}/v1`, { method: "POST", body: "{}" });
      expect(await response.text()).toBe("POST /v1");
    }
    const pooled = s.connections();
    expect(pooled).toBeLessThanOrEqual(2);
    await (await defaultFetch(4_322)(s.url)).text();
    expect(s.connections()).toBe(pooled + 1);
  });

  it("gives a body the watching fetch can pipe and wrap in a Response", async () => {
    const s = await countingServer();
    const response = await defaultFetch(4_323)(new URL("/x", s.url));
    const body = response.body?.pipeThrough(new TransformStream<Uint8Array, Uint8Array>());
    const rewrapped = new Response(body, response);
    expect(rewrapped.status).toBe(200);
    expect(await rewrapped.text()).toBe("GET /x");
  });

  it("refuses a Request object, which undici's fetch cannot read", async () => {
    const s = await countingServer();
    await expect(defaultFetch(4_324)(new Request(s.url))).rejects.toThrow(/not a Request/);
    expect(s.connections()).toBe(0);
  });
});

describe("isConnectTimeout", () => {
  it("finds undici's code along the cause chain and nothing else", () => {
    const connect = Object.assign(new Error("Connect Timeout Error"), { code: "UND_ERR_CONNECT_TIMEOUT" });
    expect(isConnectTimeout(new TypeError("fetch failed", { cause: connect }))).toBe(true);
    expect(isConnectTimeout(connect)).toBe(true);
    const headers = Object.assign(new Error("Headers Timeout Error"), { code: "UND_ERR_HEADERS_TIMEOUT" });
    expect(isConnectTimeout(new TypeError("fetch failed", { cause: headers }))).toBe(false);
    expect(isConnectTimeout(undefined)).toBe(false);
    expect(isConnectTimeout("UND_ERR_CONNECT_TIMEOUT")).toBe(false);
  });
});
