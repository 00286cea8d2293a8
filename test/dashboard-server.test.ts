// The dashboard server's JSON over a real socket, without a browser: layers, sessions, search and
// transcripts from a read-only store (missing, healthy, damaged), behind a login, and the gateway
// probe's verdicts (refused, 404 health, served health and capabilities) with a fake fetch and clock.
import { existsSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config/load.js";
import { buildDashboardApp } from "../src/dashboard/app.js";
import { GatewayProbe } from "../src/dashboard/gateway-probe.js";
import { Dashboard } from "../src/dashboard/server.js";
import { closeApp, listen } from "../src/http/listen.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { openStore, releaseStore } from "../src/store/registry.js";
import { fileDigest } from "./helpers/corrupt.js";
import { type DashboardLogin, inProcessLogin, redeemLink } from "./helpers/dashboard-login.js";
import { rawRequest } from "./helpers/raw-http.js";
import { profileWith } from "./helpers/temp-home.js";

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

interface Served {
  url: string;
  dashboard: Dashboard;
  /** The login the test started (token mode, the default); null in mode none, which has none. */
  login: DashboardLogin | null;
  /** GET url + path as JSON, with the login's access token. */
  get(path: string): Promise<{ status: number; body: Record<string, unknown> }>;
}

/** A dashboard as `tenax dashboard` serves it, logged in to unless its mode is none or `logIn` is false. */
async function serve(paths: ProfilePaths, { logIn = true } = {}): Promise<Served> {
  const { config } = loadConfig(paths);
  // Nothing listens on the gateway's port here; the probe is tested on its own below.
  const dashboard = new Dashboard({ paths, config, version: "test" });
  const app = buildDashboardApp(dashboard);
  const port = await listen(app, "127.0.0.1", 0, { name: "dashboard" });
  stops.push(async () => {
    await closeApp(app);
    await dashboard.auth.close();
  });
  const url = `http://127.0.0.1:${port}`;
  const login = config.dashboard.auth.mode === "none" || !logIn ? null : await inProcessLogin(dashboard);
  return { url, dashboard, login, get: (path) => getJson(`${url}${path}`, login?.headers) };
}

async function getJson(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function seeded(): Promise<{ paths: ProfilePaths; id: string }> {
  const paths = profileWith("gateway: { port: 1 }\n");
  const store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  const id = await store.createSession({ title: "wombat plans" });
  await store.appendMessage({ session_id: id, role: "user", content: "where do wombats sleep?" });
  await store.appendMessage({
    session_id: id,
    role: "assistant",
    content: "<img src=x onerror=alert(1)> burrows",
  });
  await releaseStore(store);
  return { paths, id };
}

type Layers = {
  ok: boolean;
  report: { status: string; components: Record<string, Record<string, unknown>> };
};

describe("dashboard server", () => {
  it("answers a request Node cannot parse with JSON that says so, not a bare 400", async () => {
    const { paths } = await seeded();
    const { url } = await serve(paths);
    const answer = await rawRequest(url, "FOO", "/api/sessions");
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: "invalid_http" } });
    expect(JSON.parse(answer.body).error.message).toMatch(/not valid HTTP \(HPE_INVALID_METHOD\)/);
  });

  it("serves layers, sessions, search and a transcript from the store, and writes nothing to it but the login", async () => {
    const { paths, id } = await seeded();
    const { url, get, login } = await serve(paths);
    // The login is the dashboard's one write; what it serves after that writes nothing, not even to the WAL.
    const written = () => [fileDigest(paths.state), fileDigest(`${paths.state}-wal`)];
    const before = written();

    const layers = (await get("/api/layers")).body as unknown as Layers;
    expect(layers.ok).toBe(true);
    expect(Object.keys(layers.report.components)).toEqual(
      expect.arrayContaining(["store", "providers", "credentials", "compression"]),
    );
    expect(layers.report.components.store).toMatchObject({ status: "ok", sessions: 1, messages: 2 });

    const sessions = await get("/api/sessions");
    expect(sessions.status).toBe(200);
    expect((sessions.body.sessions as { id: string; title: string }[]).map((s) => [s.id, s.title])).toEqual([
      [id, "wombat plans"],
    ]);

    const shown = await get(`/api/sessions/${id}`);
    expect(shown.status).toBe(200);
    const messages = shown.body.messages as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    // Untrusted text is handed over as data; the page puts it in with textContent.
    expect(messages[1]?.content).toBe("<img src=x onerror=alert(1)> burrows");

    const found = await get("/api/search?q=wombats");
    expect(found.status).toBe(200);
    expect((found.body.hits as { session_id: string }[]).map((h) => h.session_id)).toEqual([id]);
    // Each hit's session as the list shows it, so a search result has its title too.
    expect(found.body.sessions).toEqual({ [id]: expect.objectContaining({ id, title: "wombat plans" }) });

    expect((await get("/api/search?q=")).status).toBe(400);
    const missing = await get("/api/sessions/s_nope");
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: "session_not_found" });
    const posted = await fetch(`${url}/api/sessions`, { method: "POST", headers: login?.headers });
    expect(posted.status).toBe(405);
    expect((await get("/api/nothing")).status).toBe(404);
    expect(written()).toEqual(before);
  });

  it("reports a profile without a store as empty, not as an error (mode none: no login makes one)", async () => {
    const paths = profileWith("gateway: { port: 1 }\ndashboard: { auth: { mode: none } }\n");
    const { get } = await serve(paths);
    const layers = (await get("/api/layers")).body as unknown as Layers;
    expect(layers.report.components.store).toMatchObject({ status: "ok" });
    expect(String(layers.report.components.store?.detail)).toMatch(/no store yet/);
    expect((await get("/api/sessions")).body).toEqual({ sessions: [] });
    expect((await get("/api/search?q=anything")).status).toBe(200);
    expect(existsSync(paths.state)).toBe(false);
  });

  it("keeps its logins in the store, so the first login makes it, and shows it empty", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    const { get } = await serve(paths);
    expect(existsSync(paths.state)).toBe(true);
    const layers = (await get("/api/layers")).body as unknown as Layers;
    expect(layers.report.components.store).toMatchObject({ status: "ok", sessions: 0, messages: 0 });
    expect((await get("/api/sessions")).body).toEqual({ sessions: [] });
    expect((await get("/api/search?q=anything")).status).toBe(200);
  });

  it("shows a damaged store as the store layer down with the salvage command, and keeps serving (mode none)", async () => {
    const paths = profileWith("gateway: { port: 1 }\ndashboard: { auth: { mode: none } }\n");
    writeFileSync(paths.state, Buffer.alloc(8192, 0x5a));
    const { url, get } = await serve(paths);
    const layers = (await get("/api/layers")).body as unknown as Layers;
    expect(layers.report.status).toBe("down");
    expect(layers.report.components.store).toMatchObject({ status: "down" });
    expect(String(layers.report.components.store?.next)).toMatch(
      /tenax sessions recover --source .*state\.db/,
    );
    const sessions = await get("/api/sessions");
    expect(sessions.status).toBe(503);
    expect(sessions.body.error).toMatchObject({ hint: expect.stringMatching(/tenax sessions recover/) });
    // Still up: the page and the gateway probe answer.
    expect((await fetch(`${url}/`)).status).toBe(200);
    expect((await get("/api/gateway")).status).toBe(200);
  });

  it("with a damaged store, makes no login and says the store is why, and keeps serving its login page", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    writeFileSync(paths.state, Buffer.alloc(8192, 0x5a));
    const { url, dashboard } = await serve(paths, { logIn: false });
    const refused = await inProcessLogin(dashboard).catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 503, code: "store_unavailable" });
    expect(String((refused as Error).message)).toMatch(/state\.db is not a SQLite database/);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(401);
    expect(await page.text()).toMatch(/tenax dashboard link/);
    expect((await fetch(`${url}/style.css`)).status).toBe(200);
    // A credential is checked against the store: the answer names it, not a bad token.
    const layers = await getJson(`${url}/api/layers`, { authorization: "Bearer not-a-token" });
    expect(layers.status).toBe(503);
    expect(layers.body.error).toMatchObject({
      code: "store_unavailable",
      message: expect.stringMatching(/state\.db is not a SQLite database/),
    });
  });

  it("reports a config.yaml that does not load as the answer, naming the key", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    const { get } = await serve(paths);
    writeFileSync(paths.config, "gateway: { port: 1 }\nnonsense_key: 3\n");
    const layers = (await get("/api/layers")).body as {
      ok: boolean;
      error: { message: string };
    };
    expect(layers.ok).toBe(false);
    expect(layers.error.message).toMatch(/nonsense_key/);
  });

  it("answers only requests addressed to a loopback host (no DNS rebinding)", async () => {
    const { url, login } = await serve(profileWith("gateway: { port: 1 }\n"));
    const port = new URL(url).port;
    const ask = (host: string, headers = login?.headers) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: "127.0.0.1", port, path: "/api/sessions", headers: { ...headers, host } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on("error", reject);
        req.end();
      });
    expect(await ask(`evil.example:${port}`)).toBe(403);
    // The Host is checked first: a rebound page learns nothing, not even that a login is wanted.
    expect(await ask(`evil.example:${port}`, {})).toBe(403);
    expect(await ask(`localhost:${port}`)).toBe(200);
    expect(await ask(`[::1]:${port}`)).toBe(200);
  });

  it("serves the page with a policy that forbids inline script", async () => {
    const { url, login } = await serve(profileWith("gateway: { port: 1 }\n"));
    const page = await fetch(`${url}/`, { headers: login?.headers });
    expect(page.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    expect(await page.text()).toMatch(/<script type="module" src="\/app.js">/);
    const script = await fetch(`${url}/app.js`, { headers: login?.headers });
    expect(script.headers.get("content-type")).toMatch(/javascript/);
    // The login page is under the same policy, and has no script at all.
    const loginPage = await fetch(`${url}/`);
    expect(loginPage.status).toBe(401);
    expect(loginPage.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    expect(await loginPage.text()).not.toMatch(/<script/);
  });

  it("needs a login for every page and API route but the login routes and the stylesheet", async () => {
    const { url, dashboard, login } = await serve(profileWith("gateway: { port: 1 }\n"));
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(401);
    expect(page.headers.get("content-type")).toMatch(/text\/html/);
    expect(await page.text()).toMatch(/tenax dashboard link/);
    for (const path of ["/api/sessions", "/api/layers", "/api/gateway", "/app.js"]) {
      const answer = await getJson(`${url}${path}`);
      expect([path, answer.status]).toEqual([path, 401]);
      expect(answer.body.error).toMatchObject({ code: "login_required" });
    }
    const wrong = await getJson(`${url}/api/sessions`, { authorization: "Bearer not-a-token" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toMatchObject({ code: "login_required" });
    expect((await fetch(`${url}/auth/login`)).status).toBe(200);
    expect((await fetch(`${url}/style.css`)).status).toBe(200);
    // The login's cookies are a login too, as a browser sends them.
    const cookie = login?.cookie ?? "";
    expect((await fetch(`${url}/api/sessions`, { headers: { cookie } })).status).toBe(200);
    // A link opened over HTTP logs in once; opened again, it is the login page with why.
    const link = await (await dashboard.auth.logins()).createLink({ madeBy: "test" });
    const opened = await redeemLink(`${url}${link.url_path}`);
    expect((await getJson(`${url}/api/sessions`, opened.headers)).status).toBe(200);
    const again = await fetch(`${url}${link.url_path}`, { redirect: "manual" });
    expect(again.status).toBe(401);
    expect(again.headers.getSetCookie()).toEqual([]);
  });
});

describe("gateway probe", () => {
  /** A probe on a profile whose gateway (this process, by its pid file) serves on port 1, unless `running` is false. */
  function probeWith(answer: (url: string) => Response | Error, running = true) {
    let now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const paths = profileWith("gateway: { port: 1, api_key: sekrit }\n");
    if (running)
      writeFileSync(paths.pid, JSON.stringify({ pid: process.pid, host: "127.0.0.1", port: 1 }), {
        mode: 0o600,
      });
    const { config } = loadConfig(paths);
    const seen: Array<{ url: string; auth: string | null }> = [];
    const probe = new GatewayProbe({
      paths,
      config,
      deps: {
        clock: { now: () => now },
        look: async (url, options) => {
          seen.push({ url, auth: options.headers?.authorization ?? null });
          const result = answer(url);
          if (result instanceof Error)
            return {
              kind: "no_answer",
              why: "refused",
              message: "connection refused: nothing listens there",
            };
          return { kind: "answer", status: result.status, body: await result.json() };
        },
      },
    });
    return { probe, seen, tick: (ms: number) => (now += ms) };
  }

  const refused = () => new Error("ECONNREFUSED");

  it("says since when the gateway is unreachable, keeps that time, and clears it when it is back", async () => {
    let up = false;
    const { probe, tick } = probeWith((url) =>
      !up
        ? refused()
        : url.endsWith("/health")
          ? Response.json({ status: "ok", components: { store: { status: "ok", detail: "fine" } } })
          : Response.json({ version: "1", capabilities: ["chat.completions", "events"] }),
    );
    const first = await probe.probe();
    expect(first).toMatchObject({ reachable: false, source: "pid_file", url: "http://127.0.0.1:1" });
    expect(first.error).toBe(
      "http://127.0.0.1:1 does not answer (connection refused: nothing listens there)",
    );
    const since = first.unreachable_since;
    tick(3000);
    expect((await probe.probe()).unreachable_since).toBe(since);
    up = true;
    const back = await probe.probe();
    expect(back).toMatchObject({
      reachable: true,
      unreachable_since: null,
      error: null,
      health: { served: true, status: "ok", components: { store: { status: "ok", detail: "fine" } } },
      capabilities: { served: true, version: "1", list: ["chat.completions", "events"] },
    });
  });

  it("never takes what answers on the configured port for this profile's gateway when none of its runs", async () => {
    const { probe, seen } = probeWith(
      (url) =>
        url.endsWith("/health")
          ? Response.json({ status: "ok", components: { store: { status: "ok", detail: "another's" } } })
          : Response.json({ version: "1", capabilities: ["chat.completions"] }),
      false,
    );
    const view = await probe.probe();
    expect(seen.map((s) => s.url)).toEqual(["http://127.0.0.1:1/health"]);
    expect(view).toMatchObject({ reachable: false, source: "config", health: null });
    expect(view.error).toBe(
      "something answers on http://127.0.0.1:1, but this profile has no gateway pid file: another profile's gateway or another program holds the port",
    );
  });

  it("shows a gateway without /health as reachable with health not served, and sends the key", async () => {
    const { probe, seen } = probeWith((url) =>
      url.endsWith("/health")
        ? Response.json({ error: { message: "no route" } }, { status: 404 })
        : Response.json({ version: "1", capabilities: ["chat.completions"] }),
    );
    const view = await probe.probe();
    expect(view).toMatchObject({ reachable: true, health: { served: false, http_status: 404 } });
    expect(view.capabilities).toMatchObject({ served: true, list: ["chat.completions"] });
    expect(seen.every((s) => s.auth === "Bearer sekrit")).toBe(true);
  });

  it("reads a down gateway's 503 health, and says when the key is refused", async () => {
    const down = probeWith((url) =>
      url.endsWith("/health")
        ? Response.json(
            { status: "down", components: { store: { status: "down", detail: "corrupt" } } },
            { status: 503 },
          )
        : Response.json({ version: "1", capabilities: [] }),
    );
    expect((await down.probe.probe()).health).toMatchObject({ served: true, status: "down" });
    const refusedKey = probeWith(() => Response.json({ error: {} }, { status: 401 }));
    expect((await refusedKey.probe.probe()).error).toMatch(/its \/health refused this profile's key \(401\)/);
  });
});
