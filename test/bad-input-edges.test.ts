// Bad input at the edge is a documented 400, never a 500: a body nested thousands deep on every
// JSON route of a real gateway, and a path that is not valid percent-encoding on the gateway and
// on a real dashboard, each answered in its server's error shape, and each server serving on.
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { cliEnvironment, requireBuild } from "./helpers/cli.js";
import { startDashboard } from "./helpers/dashboard.js";
import { expectError, simProfile } from "./helpers/gateway.js";
import { startListening } from "./helpers/listening.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

/** A gateway child that needs the key it is given (today's gateway and one that requires a key alike). */
async function keyedGateway() {
  const key = randomBytes(16).toString("hex");
  // biome-ignore lint/suspicious/noTemplateCurlyInString: config.yaml's own ${VAR} reference
  const { home } = await simProfile('api_key: "${TENAX_API_KEY}"');
  const env = { ...cliEnvironment(home), TENAX_API_KEY: key };
  const gw = await startListening(home, ["gateway", "run", "--port", "0"], "gateway", env);
  const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
  return { gw, headers };
}

const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
// Metadata is an object of strings, so the depth a real request has goes in a field that takes
// any object (prompt_cache_options, sent on as it came).
const deepBody = (depth: number, field = "metadata") =>
  `{"model":"tenax","messages":[{"role":"user","content":"hi"}],"${field}":${nested(depth)}}`;

describe("a JSON body nested too deep", () => {
  it("is a 400 json_too_deep on every JSON route, and the gateway serves on", async () => {
    const { gw, headers } = await keyedGateway();
    for (const route of ["/v1/runs", "/v1/chat/completions"]) {
      const variants: Array<Record<string, string>> = [{}, { "idempotency-key": `deep-${route}` }];
      for (const extra of variants) {
        const response = await fetch(`${gw.url}${route}`, {
          method: "POST",
          headers: { ...headers, ...extra },
          body: deepBody(5000),
        });
        const error = await expectError(response, 400, "json_too_deep");
        expect(error.message).toMatch(/more than 64 levels deep/);
      }
    }
    // Depth a real request has is taken as before.
    const run = await fetch(`${gw.url}/v1/runs`, {
      method: "POST",
      headers,
      body: deepBody(10, "prompt_cache_options"),
    });
    expect(run.status).toBe(202);
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: deepBody(10, "prompt_cache_options"),
    });
    expect(chat.status).toBe(200);
    expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
    expect(gw.stderr()).not.toMatch(/a bug in Tenax|RangeError|Maximum call stack/);
  });
});

describe("a path part that is not valid percent-encoding", () => {
  it("is a 400 invalid_url on the gateway's session and run routes", async () => {
    const { gw, headers } = await keyedGateway();
    for (const path of ["/api/sessions/%ZZ", "/v1/runs/%E0%A4%A"]) {
      const error = await expectError(await fetch(`${gw.url}${path}`, { headers }), 400, "invalid_url");
      expect(error.message).toMatch(/is not valid percent-encoding/);
    }
  });

  it("is a 400 invalid_url on the dashboard too, in the dashboard's shape, and it serves on", async () => {
    const dashboard = await startDashboard(profileWith("").home);
    // Logged in with the link it printed, as its user is.
    expect(dashboard.login).not.toBeNull();
    const response = await dashboard.fetch("/api/sessions/%ZZ");
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("invalid_url");
    expect(body.error.message).toBe('the session id "%ZZ" is not valid percent-encoding');
    expect((await dashboard.fetch("/api/sessions")).status).toBe(200);
  });
});
