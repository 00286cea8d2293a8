// The gateway is no open door to the web, against a real `tenax gateway run` process: JSON routes
// take only application/json (415 before any work), a Host the gateway is not reached by is a 421
// (DNS rebinding), a foreign Origin a 403 unless gateway.cors_origins lists it (which also answers
// its preflights), and a key is needed by default: the first start writes one to the profile's
// .env (0600) and says where, later starts reuse it; `auth: none` is for loopback only; a blank
// key is a config error.
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import {
  expectError,
  refusedGateway,
  sharedSimGateway,
  simProfile,
  startGateway,
} from "./helpers/gateway.js";
import { keyedFetch, startListening } from "./helpers/listening.js";
import { rawRequest } from "./helpers/raw-http.js";

beforeAll(() => requireBuild());

const CHAT = JSON.stringify({ model: "tenax", messages: [{ role: "user", content: "run a turn" }] });

function errorCode(body: string): string | undefined {
  return (JSON.parse(body) as { error?: { code?: string } }).error?.code;
}

async function sessionCount(gw: { fetch(path: string): Promise<Response> }): Promise<number> {
  const listed = (await (await gw.fetch("/api/sessions")).json()) as { data: unknown[] };
  return listed.data.length;
}

describe("the gateway's web checks", () => {
  // These use the default config and change nothing another of them reads: one gateway serves
  // them (the first of them finds its store new, with no session).
  describe("with the default config", () => {
    const shared = sharedSimGateway();
    it("refuses text/plain, form and multipart bodies that hold valid JSON with 415, before any turn", async () => {
      const { gw, sim } = shared();
      const multipart = `--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n${CHAT}\r\n--x--\r\n`;
      const cases: [string | undefined, string][] = [
        ["text/plain", CHAT],
        ["text/plain;charset=UTF-8", CHAT],
        ["application/x-www-form-urlencoded", CHAT],
        ["multipart/form-data; boundary=x", multipart],
        ["application/json; charset=latin1", CHAT],
        ["application/jsonx", CHAT],
        [undefined, CHAT],
      ];
      for (const path of ["/v1/chat/completions", "/v1/runs"])
        for (const [type, body] of cases) {
          const headers: Record<string, string> = { ...gw.auth, ...(type ? { "content-type": type } : {}) };
          const answer = await rawRequest(gw.url, "POST", path, { headers, body });
          expect(answer.status, `${path} ${type}`).toBe(415);
          expect(errorCode(answer.body)).toBe("unsupported_media_type");
          expect(JSON.parse(answer.body).error.message).toMatch(/Content-Type: application\/json/);
        }
      // Nothing ran: the model was never called and no session was made.
      expect(sim.requests()).toHaveLength(0);
      expect(await sessionCount(gw)).toBe(0);
      // application/json, with or without a UTF-8 charset, is served.
      for (const type of ["application/json", 'Application/JSON; charset="utf-8"']) {
        const ok = await rawRequest(gw.url, "POST", "/v1/chat/completions", {
          headers: { ...gw.auth, "content-type": type },
          body: CHAT,
        });
        expect(ok.status, type).toBe(200);
      }
      expect(sim.requests()).toHaveLength(2);
    });

    it("answers 421 to a Host that is neither loopback nor the configured host (DNS rebinding)", async () => {
      const { gw, sim } = shared();
      const port = new URL(gw.url).port;
      for (const host of ["evil.example", `attacker.test:${port}`, `127.0.0.1.attacker.test:${port}`]) {
        for (const [method, path] of [
          ["POST", "/v1/chat/completions"],
          ["GET", "/api/sessions"],
          ["GET", "/health/live"],
        ] as const) {
          const answer = await rawRequest(gw.url, method, path, {
            headers: { ...gw.auth, host, "content-type": "application/json" },
            ...(method === "POST" ? { body: CHAT } : {}),
          });
          expect(answer.status, `${host} ${path}`).toBe(421);
          expect(errorCode(answer.body)).toBe("misdirected_request");
        }
      }
      expect(sim.requests()).toHaveLength(0);
      // Loopback names on any port pass, as does the configured host with the bound port.
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "127.9.8.7", "[::1]:1"]) {
        const answer = await rawRequest(gw.url, "GET", "/v1/models", { headers: { ...gw.auth, host } });
        expect(answer.status, host).toBe(200);
      }
    });

    it("answers 403 to a foreign Origin (another loopback address, null) and runs no turn", async () => {
      const { gw, sim } = shared();
      const port = new URL(gw.url).port;
      for (const origin of [
        `http://127.0.0.2:${port}`,
        "null",
        `http://localhost:${port}`,
        "https://evil.example",
      ]) {
        const answer = await rawRequest(gw.url, "POST", "/v1/chat/completions", {
          headers: { ...gw.auth, origin, "content-type": "application/json" },
          body: CHAT,
        });
        expect(answer.status, origin).toBe(403);
        expect(errorCode(answer.body)).toBe("origin_not_allowed");
        expect(JSON.parse(answer.body).error.message).toMatch(/gateway\.cors_origins/);
        expect(answer.headers["access-control-allow-origin"]).toBeUndefined();
        const preflight = await rawRequest(gw.url, "OPTIONS", "/v1/chat/completions", {
          headers: { origin, "access-control-request-method": "POST" },
        });
        expect(preflight.status).toBe(403);
      }
      expect(sim.requests()).toHaveLength(0);
      // The gateway's own origin is no foreign one.
      const own = await rawRequest(gw.url, "POST", "/v1/chat/completions", {
        headers: { ...gw.auth, origin: `http://127.0.0.1:${port}`, "content-type": "application/json" },
        body: CHAT,
      });
      expect(own.status).toBe(200);
    });

    it("needs the key by default: 401 without it or with a wrong one, and no turn runs", async () => {
      const { gw, sim } = shared();
      expect((await fetch(`${gw.url}/health/live`)).status).toBe(200);
      await expectError(await fetch(`${gw.url}/api/capabilities`), 401, "invalid_api_key");
      const chat = (auth: Record<string, string>) =>
        fetch(`${gw.url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", ...auth },
          body: CHAT,
        });
      await expectError(await chat({}), 401, "invalid_api_key");
      await expectError(await chat({ authorization: `Bearer ${gw.key}x` }), 401, "invalid_api_key");
      expect(sim.requests()).toHaveLength(0);
      expect((await chat(gw.auth)).status).toBe(200);
      expect(sim.requests()).toHaveLength(1);
    });
  });

  it("answers 421 to its own LAN name unless gateway.allowed_hosts lists it", async () => {
    const { home } = await simProfile('allowed_hosts: ["gateway.example.lan"]');
    const gw = await startGateway(home);
    const ask = async (host: string) =>
      (await rawRequest(gw.url, "GET", "/v1/models", { headers: { ...gw.auth, host } })).status;
    expect(await ask("gateway.example.lan")).toBe(200);
    expect(await ask("GATEWAY.example.lan:443")).toBe(200);
    expect(await ask("other.example.lan")).toBe(421);
  });

  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a?.family === "IPv4" && !a.internal)?.address;
  it.skipIf(external === undefined)(
    "bound to 0.0.0.0 (with its key) answers the machine's own addresses on its port, and no other",
    async () => {
      const { home } = await simProfile();
      const gw = await startGateway(home, ["--host", "0.0.0.0", "--port", "0"]);
      const port = Number(new URL(gw.url).port);
      const local = `http://127.0.0.1:${port}`;
      const ask = async (host: string) =>
        (await rawRequest(local, "GET", "/v1/models", { headers: { ...gw.auth, host } })).status;
      expect(await ask(`${external}:${port}`)).toBe(200);
      expect(await ask(`${external}:${port + 1}`)).toBe(421);
      expect(await ask(`attacker.test:${port}`)).toBe(421);
    },
  );

  it("lets a listed origin in with CORS headers, answers its preflight 204, and still wants the key", async () => {
    const app = "http://127.0.0.3:5173";
    const { home, sim } = await simProfile(`cors_origins: ["${app}", "https://app.example.com"]`);
    const gw = await startGateway(home);
    const preflight = await rawRequest(gw.url, "OPTIONS", "/v1/chat/completions", {
      headers: {
        origin: app,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-session-id",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe(app);
    expect(String(preflight.headers["access-control-allow-methods"])).toMatch(/POST/);
    const allowed = String(preflight.headers["access-control-allow-headers"]).toLowerCase();
    for (const header of [
      "authorization",
      "content-type",
      "x-session-id",
      "idempotency-key",
      "last-event-id",
    ])
      expect(allowed).toContain(header);
    expect(sim.requests()).toHaveLength(0);

    const answer = await rawRequest(gw.url, "POST", "/v1/chat/completions", {
      headers: { ...gw.auth, origin: app, "content-type": "application/json" },
      body: CHAT,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers["access-control-allow-origin"]).toBe(app);
    expect(String(answer.headers["access-control-expose-headers"]).toLowerCase()).toContain("x-session-id");
    expect(answer.headers.vary).toMatch(/Origin/);
    // Its page can read a refusal too, and it is still a refusal without the key.
    const nokey = await rawRequest(gw.url, "GET", "/api/sessions", { headers: { origin: app } });
    expect(nokey.status).toBe(401);
    expect(nokey.headers["access-control-allow-origin"]).toBe(app);
    // Another origin is still foreign.
    const other = await rawRequest(gw.url, "GET", "/v1/models", {
      headers: { ...gw.auth, origin: "https://app.example.org" },
    });
    expect(other.status).toBe(403);
  });
});

describe("the gateway's key", () => {
  it("is written on the first start to the profile's .env (0600), where it is said to be, and reused after", async () => {
    const { home, paths } = await simProfile();
    const fresh = { TENAX_API_KEY: undefined };
    const first = await startGateway(home, ["--port", "0"], ["gateway", "run"], fresh);
    const env = readFileSync(paths.env, "utf8");
    const key = /^TENAX_API_KEY=(tnx-[A-Za-z0-9_-]{43})$/m.exec(env)?.[1];
    expect(key, env).toBeDefined();
    expect(statSync(paths.env).mode & 0o777).toBe(0o600);
    // It says where the key is, never the key itself.
    expect(first.stdout()).toContain(`wrote a new one to ${paths.env} as TENAX_API_KEY`);
    expect(first.stdout() + first.stderr()).not.toContain(key);
    expect((await fetch(`${first.url}/api/capabilities`)).status).toBe(401);
    expect(
      (await keyedFetch(`${first.url}/api/capabilities`, { authorization: `Bearer ${key}` })).status,
    ).toBe(200);
    // `tenax status` finds the key by itself and reads the gateway's own /health with it.
    const status = await tenaxAsync(home, ["status", "--json"], { env: fresh });
    const report = JSON.parse(status.stdout) as {
      components: Record<string, { status: string; detail: string }>;
    };
    expect(report.components.gateway?.detail).not.toMatch(/does not answer properly/);
    expect(report.components.scheduler?.detail).not.toMatch(/did not say/);
    first.child.kill("SIGTERM");
    await first.exited;

    const second = await startGateway(home, ["--port", "0"], ["gateway", "run"], fresh);
    expect(readFileSync(paths.env, "utf8")).toBe(env);
    expect(second.stdout()).toContain(`API key: TENAX_API_KEY in ${paths.env}`);
    expect(second.stdout()).not.toContain("wrote a new one");
    expect(
      (await keyedFetch(`${second.url}/api/capabilities`, { authorization: `Bearer ${key}` })).status,
    ).toBe(200);
  });

  it("a dashboard started before the gateway's first start finds the key it wrote, on its next probe", async () => {
    const { home, paths } = await simProfile();
    const fresh = { TENAX_API_KEY: undefined };
    const dashboard = await startListening(home, ["dashboard", "--port", "0"], "dashboard", fresh);
    const gw = await startGateway(home, ["--port", "0"], ["gateway", "run"], fresh);
    expect(gw.stdout()).toContain(`wrote a new one to ${paths.env}`);
    let seen: { url?: string; reachable?: boolean | null; error?: string | null } = {};
    for (let i = 0; i < 50 && !(seen.reachable === true && seen.error === null); i++) {
      await new Promise((r) => setTimeout(r, 200));
      seen = (await (await dashboard.fetch("/api/gateway")).json()) as typeof seen;
    }
    expect(seen).toMatchObject({ url: gw.url, reachable: true, error: null });
  });

  it("keeps the other lines of an existing .env and tightens one others can read to 0600, saying so", async () => {
    const { home, paths } = await simProfile();
    writeFileSync(paths.env, "OTHER_SECRET=keep-me", { mode: 0o644 });
    const gw = await startGateway(home, ["--port", "0"], ["gateway", "run"], { TENAX_API_KEY: undefined });
    const env = readFileSync(paths.env, "utf8");
    expect(env.split("\n")[0]).toBe("OTHER_SECRET=keep-me");
    expect(env).toMatch(/^TENAX_API_KEY=tnx-/m);
    expect(statSync(paths.env).mode & 0o777).toBe(0o600);
    expect(gw.stderr()).toMatch(/could be read by other users \(mode 644\).*made it 0600/);
  });

  it("auth: none serves without a key on loopback, and refuses to start on 0.0.0.0 (exit 2)", async () => {
    const { home, sim } = await simProfile("auth: none");
    const gw = await startGateway(home, ["--port", "0"], ["gateway", "run"], { TENAX_API_KEY: undefined });
    expect(gw.stdout()).toMatch(/gateway\.auth is none/);
    const answer = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: CHAT,
    });
    expect(answer.status).toBe(200);
    expect(sim.requests()).toHaveLength(1);
    gw.child.kill("SIGTERM");
    await gw.exited;
    const refused = await refusedGateway(home, ["--host", "0.0.0.0", "--port", "0"]);
    expect(refused.status).toBe(2);
    expect(refused.output).toMatch(/refusing to serve on 0\.0\.0\.0 with gateway\.auth: none/);
  });

  it("a blank key is a config error naming the key and its line, wherever it is set", async () => {
    const inFile = await simProfile('api_key: "   "');
    const fromFile = await refusedGateway(inFile.home);
    expect(fromFile.status).toBe(78);
    expect(fromFile.output).toMatch(
      /config\.yaml:4: gateway\.api_key: the API key is empty or only whitespace/,
    );

    const inEnv = await simProfile();
    const fromEnv = await refusedGateway(inEnv.home, ["--port", "0"], { TENAX_API_KEY: "  " });
    expect(fromEnv.status).toBe(78);
    expect(fromEnv.output).toMatch(/TENAX_API_KEY in the environment .*empty or only whitespace/);

    const inDotenv = await simProfile();
    writeFileSync(inDotenv.paths.env, "# keys\nOTHER=1\nTENAX_API_KEY=\n", { mode: 0o600 });
    const fromDotenv = await refusedGateway(inDotenv.home, ["--port", "0"], { TENAX_API_KEY: undefined });
    expect(fromDotenv.status).toBe(78);
    expect(fromDotenv.output).toContain(`${inDotenv.paths.env}:3: TENAX_API_KEY: the API key is empty`);
  });

  it("a malformed cors_origins entry is a config error naming its line", async () => {
    const { home } = await simProfile('cors_origins: ["https://app.example.com/", "*"]');
    const refused = await refusedGateway(home);
    expect(refused.status).toBe(78);
    expect(refused.output).toMatch(
      /config\.yaml:4: gateway\.cors_origins\[0\]: .*write "https:\/\/app\.example\.com"/,
    );
    expect(refused.output).toMatch(/config\.yaml:4: gateway\.cors_origins\[1\]: "\*" is not a web origin/);
  });
});
