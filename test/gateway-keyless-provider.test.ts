// A provider configured without api_keys (a local server: Ollama, llama.cpp) is never locked out by
// a 401, against a real `tenax gateway run` and a real simulator scripted to refuse: the refusal is
// a classified error naming the server, the provider and the config key to add, and the next turn
// calls the server again. /health and `tenax status` show the provider as keyless. A ledger row an
// older Tenax wrote for the keyless pseudo-key (disabled after auth) locks nobody out either.
import { writeFileSync } from "node:fs";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { keyFingerprint } from "../src/llm/key-fingerprint.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { requireBuild, tenaxAsync, testGatewayKey } from "./helpers/cli.js";
import { startGateway } from "./helpers/gateway.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

const sims: Simulator[] = [];
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

/** What the upgrade left: the key a provider without api_keys was called with before. */
const OLD_PSEUDO_KEY = "no-key";

async function keylessProfile() {
  const sim = await startSimulator();
  sims.push(sim);
  const paths = profileWith(
    `model: { provider: local, name: echo }
providers:
  local: { type: openai, base_url: "${sim.url}" }
retry: { max_attempts: 2 }
health: { provider_probe: off }
gateway: { api_key: "\${TENAX_API_KEY}", drain_timeout: 1 }
`,
  );
  const key = testGatewayKey(paths.home);
  writeFileSync(paths.env, `TENAX_API_KEY=${key}\n`, { mode: 0o600 });
  return { sim, paths, home: paths.home, headers: { authorization: `Bearer ${key}` } };
}

async function turn(url: string, headers: Record<string, string>, content: string) {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content }] }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const chatCalls = (sim: Simulator) => sim.requests().filter((r) => r.path === "/v1/chat/completions");

interface Credentials {
  status: string;
  detail: string;
  next: string | null;
  providers: { provider: string; keyed: boolean; keys: { status: string }[] }[];
}

describe("a provider that needs no key", () => {
  it("a 401 is reported as a missing key (server, provider and config key named), and the next turn calls the server again", async () => {
    const { sim, home, headers } = await keylessProfile();
    sim.script([
      {
        type: "error",
        status: 401,
        body: { error: { message: "Unauthorized", type: "invalid_request_error", code: "unauthorized" } },
      },
    ]);
    const gw = await startGateway(home);

    const refused = await turn(gw.url, headers, "who is there?");
    expect(refused.status).toBe(502);
    const error = refused.body.error as { code: string; message: string };
    expect(error.code).toBe("key_required");
    expect(error.message).toContain(`the server at ${sim.url} wants a key`);
    expect(error.message).toContain("add api_keys under providers.local");
    expect(error.message).not.toMatch(/disabled|replace the key/);
    // Not retried within the turn: the same call without a key is refused the same way.
    expect(chatCalls(sim)).toHaveLength(1);

    // The next turn reaches the server again (it answers now), and so does the one after it.
    const answered = await turn(gw.url, headers, "and now?");
    expect(answered.status).toBe(200);
    expect(JSON.stringify(answered.body)).toContain("echo: and now?");
    expect(chatCalls(sim)).toHaveLength(2);

    const health = (await (await gw.fetch("/health")).json()) as {
      components: { credentials: Credentials };
    };
    expectKeyless(health.components.credentials);

    const status = await tenaxAsync(home, ["status", "--json"]);
    const report = JSON.parse(status.stdout) as { components: { credentials: Credentials } };
    expectKeyless(report.components.credentials);
    const text = await tenaxAsync(home, ["status"]);
    expect(text.stdout).toMatch(/^ {2}credentials\s+ok\s+local needs no key/m);
    expect(text.stdout).not.toContain("all usable");
  });

  it("a ledger row that disabled the keyless pseudo-key (written before the upgrade) locks nobody out", async () => {
    const { sim, paths, home, headers } = await keylessProfile();
    const store = await openStore(paths);
    await store.credentials().record("local", keyFingerprint(OLD_PSEUDO_KEY), {
      status: "disabled",
      reason: "auth",
      failures: "increment",
      now: Date.now(),
    });
    await releaseStore(store);

    const before = JSON.parse((await tenaxAsync(home, ["status", "--json"])).stdout) as {
      components: { credentials: Credentials };
    };
    expectKeyless(before.components.credentials);

    const gw = await startGateway(home);
    const answered = await turn(gw.url, headers, "still locked out?");
    expect(answered.status).toBe(200);
    expect(JSON.stringify(answered.body)).toContain("echo: still locked out?");
    expect(chatCalls(sim)).toHaveLength(1);
  });
});

function expectKeyless(credentials: Credentials): void {
  expect(credentials.status).toBe("ok");
  expect(credentials.detail).toContain("local needs no key");
  expect(credentials.detail).not.toMatch(/all usable|disabled/);
  expect(credentials.next).toBeNull();
  expect(credentials.providers).toEqual([expect.objectContaining({ provider: "local", keyed: false })]);
  // The one pseudo-key it is called with is never disabled.
  expect(credentials.providers[0]?.keys.map((k) => k.status)).toEqual(["ok"]);
}
