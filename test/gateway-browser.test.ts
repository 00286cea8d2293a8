// The attacks a web page can make on the local gateway, in real headless Chromium against a real
// `tenax gateway run`: a page served from another loopback address submits a text/plain form,
// sends a no-cors fetch with a JSON-looking text/plain body, and tries a JSON fetch with
// credentials; a page whose name was rebound to 127.0.0.1 (DNS rebinding, mapped with Chromium's
// host resolver rules) calls the gateway as its own origin. None of them runs a turn, with the key
// the gateway needs by default and with `auth: none` (where only the web checks stand in the way).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openPage, requireChromium } from "./helpers/browser.js";
import { requireBuild } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway } from "./helpers/gateway.js";

beforeAll(() => {
  requireBuild();
  requireChromium();
});

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

const JSON_TEXT = JSON.stringify({
  model: "tenax",
  messages: [{ role: "user", content: "from a web page" }],
});

/** The attacker's site: one page on 127.0.0.2 with a text/plain form aimed at the gateway. */
async function attackerSite(gateway: string): Promise<string> {
  // A text/plain form sends `name=value`: split the JSON around a "=" so the body parses whole.
  const name = '{"model":"tenax","messages":[{"role":"user","content":"form post","pad":"';
  const value = '"}]}';
  const page = `<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="attack" method="POST" enctype="text/plain" target="sink" action="${gateway}/v1/chat/completions">
<input type="hidden" name='${name}' value='${value}'>
<button id="go" type="submit">go</button>
</form></body></html>`;
  const server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(page);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.2", resolve));
  return `http://127.0.0.2:${(server.address() as AddressInfo).port}/`;
}

/** How many responses of `code` the gateway counted on the chat route (its own /metrics). */
async function chatResponses(gw: GatewayProcess, code: number): Promise<number> {
  const text = await (await gw.fetch("/metrics")).text();
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`tenax_http_responses_total{route="/v1/chat/completions",code="${code}"}`));
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

async function sessions(gw: GatewayProcess): Promise<number> {
  return ((await (await gw.fetch("/api/sessions")).json()) as { data: unknown[] }).data.length;
}

describe.each([
  ["with the key it needs by default", ""],
  ["with auth: none", "auth: none"],
])("a web page against the gateway, %s", (_name, gatewayConfig) => {
  it("cannot run a turn from another loopback origin: form, no-cors fetch, JSON fetch with credentials", async () => {
    const { home, sim } = await simProfile(gatewayConfig);
    const gw = await startGateway(home);
    const site = await attackerSite(gw.url);
    const page = await openPage();
    await page.goto(site);

    // (a) A text/plain form: a "simple" request the browser sends across origins without asking.
    const [formAnswer] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${gw.url}/v1/chat/completions`),
      page.locator("#go").click(),
    ]);
    expect(formAnswer.request().method()).toBe("POST");
    // (b) fetch in no-cors mode: the page cannot read the answer, but the request goes out.
    const noCors = await page.evaluate(
      async ([url, body]) => {
        const r = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          mode: "no-cors",
          headers: { "content-type": "text/plain" },
          body,
        });
        return r.type;
      },
      [gw.url, JSON_TEXT] as const,
    );
    expect(noCors).toBe("opaque");
    // (c) A real JSON request with credentials: the browser asks first (preflight), and is refused.
    const cors = await page.evaluate(
      async ([url, body]) => {
        try {
          const r = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            credentials: "include",
            headers: { "content-type": "application/json" },
            body,
          });
          return `answered ${r.status}`;
        } catch (error) {
          return `blocked: ${String(error)}`;
        }
      },
      [gw.url, JSON_TEXT] as const,
    );
    expect(cors).toMatch(/^blocked: TypeError/);

    // Each reached the gateway and was refused there (form, no-cors fetch, preflight): 403s.
    expect(await chatResponses(gw, 403)).toBe(3);
    expect(await chatResponses(gw, 200)).toBe(0);
    // No turn ran: the model saw no request, and no session was made.
    expect(sim.requests()).toHaveLength(0);
    expect(await sessions(gw)).toBe(0);
  });

  it("cannot run a turn through DNS rebinding: a page of the attacker's name, resolved to 127.0.0.1", async () => {
    const { home, sim } = await simProfile(gatewayConfig);
    const gw = await startGateway(home);
    const port = new URL(gw.url).port;
    const page = await openPage(undefined, ["--host-resolver-rules=MAP attacker.test 127.0.0.1"]);
    // The page's origin is the attacker's name on the gateway's port: to the browser, every
    // request it makes to the gateway is same-origin, so only the Host header tells them apart.
    const landing = await page.goto(`http://attacker.test:${port}/`);
    expect(landing?.status()).toBe(421);
    const answer = await page.evaluate(async (body) => {
      const r = await fetch("/v1/chat/completions", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      return { status: r.status, text: await r.text() };
    }, JSON_TEXT);
    expect(answer.status).toBe(421);
    expect(JSON.parse(answer.text).error.code).toBe("misdirected_request");
    const sessionsRead = await page.evaluate(async () => (await fetch("/api/sessions")).status);
    expect(sessionsRead).toBe(421);
    // Chromium sends a request answered 421 once more on a new connection (as HTTP allows).
    expect(await chatResponses(gw, 421)).toBeGreaterThanOrEqual(1);
    expect(await chatResponses(gw, 200)).toBe(0);
    expect(sim.requests()).toHaveLength(0);
    expect(await sessions(gw)).toBe(0);
  });
});
