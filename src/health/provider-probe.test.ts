// The `models` probe against a real HTTP server that refuses every request without a key: for a
// provider configured without api_keys that is the missing key a call would meet (`key_required`,
// naming the server and the config key); for one with keys it stays the key's refusal (`auth`).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { probeProvider } from "./provider-probe.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

/** Answers 401 to anything, as llama.cpp's server does when started with --api-key. */
async function refusingServer(): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(401, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "Invalid API Key", type: "authentication_error" } }));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

describe("the models probe of a server that wants a key", () => {
  it("names the missing key for a provider without api_keys, and the key's refusal for one with keys", async () => {
    const base_url = await refusingServer();
    const look = (keyed: boolean) =>
      probeProvider(
        {
          provider: "local",
          type: "openai",
          base_url,
          keyed,
          key: async () => (keyed ? "sk-bad-key-0001" : null),
        },
        "models",
        AbortSignal.timeout(5_000),
        Date.now,
      );
    const keyless = await look(false);
    expect(keyless).toMatchObject({ ok: false, reason: "key_required" });
    expect(keyless.message).toContain(`the server at ${base_url} wants a key`);
    expect(keyless.message).toContain("add api_keys under providers.local in config.yaml");
    expect(await look(true)).toMatchObject({ ok: false, reason: "auth" });
  });
});
