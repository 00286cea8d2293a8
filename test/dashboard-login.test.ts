// Logging in to a real `tenax dashboard` process in token mode, as a phone or a desktop app does:
// the one-time link works once; the wake burst (20 refreshes with one token at once) gets one
// successor and keeps the login; the successor works; the rotated token replayed after the grace
// window is a 401 that ends the successor too, told in the audit trail; a request without a login
// is a 401 (the login page for the page itself); the cookie gate renews an expired session on its
// own; a client that keeps failing is refused for a while; and behind a TLS proxy (public_url) the
// proxy's name is served and the cookies are Secure.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { startDashboard } from "./helpers/dashboard.js";
import { type DashboardLogin, loginLinkIn, loginOfCookies, redeemLink } from "./helpers/dashboard-login.js";
import { rawRequest } from "./helpers/raw-http.js";
import { profileWith } from "./helpers/temp-home.js";

beforeAll(() => requireBuild());

interface TokenAnswer {
  access_token: string;
  refresh_token: string;
  expires_in: number;
  error?: { code: string; message: string };
}

function exchange(url: string, refreshToken: string): Promise<Response> {
  return fetch(`${url}/auth/token`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ grant_type: "refresh_token", refresh_token: refreshToken }),
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the dashboard's token logins, against a real dashboard process", () => {
  it("a link logs in once; without a login the API is 401 and the page is the login page", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    const dashboard = await startDashboard(paths.home);
    const link = loginLinkIn(dashboard.stdout());
    expect(link, dashboard.stdout()).not.toBeNull();

    for (const path of ["/api/overview", "/api/sessions", "/api/layers", "/api/logins", "/app.js"]) {
      const res = await fetch(`${dashboard.url}${path}`);
      expect(res.status, path).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("login_required");
    }
    const page = await fetch(`${dashboard.url}/`);
    expect(page.status).toBe(401);
    const html = await page.text();
    expect(html).toContain("tenax dashboard link");
    expect(html).not.toContain("app.js");
    // The login routes and the stylesheet need none.
    expect((await fetch(`${dashboard.url}/auth/login`)).status).toBe(200);
    expect((await fetch(`${dashboard.url}/style.css`)).status).toBe(200);
    expect((await fetch(`${dashboard.url}/health/live`)).status).toBe(200);

    // The helper redeemed the printed link when the dashboard started: it is used up.
    const again = await fetch(link ?? "", { redirect: "manual" });
    expect(again.status).toBe(401);
    expect(await again.text()).toMatch(/already used at .*a link logs in once/);

    // A fresh link from the CLI works once, and its login reads the API with its cookies.
    const made = await tenaxAsync(paths.home, ["dashboard", "link", "--ttl", "5m", "--json"]);
    expect(made.status, made.stderr).toBe(0);
    const { url: fresh } = JSON.parse(made.stdout) as { url: string };
    expect(fresh.startsWith(`${dashboard.url}/auth/link?token=`)).toBe(true);
    const login = await redeemLink(fresh);
    const overview = await fetch(`${dashboard.url}/api/overview`, { headers: { cookie: login.cookie } });
    expect(overview.status).toBe(200);
    expect((await fetch(fresh, { redirect: "manual" })).status).toBe(401);

    // A link preview (a chat app drawing a card) does not use a link up.
    const third = JSON.parse((await tenaxAsync(paths.home, ["dashboard", "link", "--json"])).stdout) as {
      url: string;
    };
    const preview = await fetch(third.url, { headers: { "user-agent": "TelegramBot (like TwitterBot)" } });
    expect(preview.status).toBe(200);
    expect(preview.headers.get("set-cookie")).toBeNull();
    expect((await redeemLink(third.url)).access).toMatch(/^[\w-]{43}$/);

    // A TLS proxy on this machine (no public_url) says so with X-Forwarded-Proto: Secure cookies.
    const fourth = JSON.parse((await tenaxAsync(paths.home, ["dashboard", "link", "--json"])).stdout) as {
      url: string;
    };
    const viaTls = await fetch(fourth.url, { redirect: "manual", headers: { "x-forwarded-proto": "https" } });
    expect(viaTls.status).toBe(303);
    const secure = viaTls.headers.getSetCookie();
    expect(secure).toHaveLength(2);
    for (const c of secure) expect(c).toMatch(/; Secure; SameSite=Lax$/);

    const listed = await tenaxAsync(paths.home, ["dashboard", "logins", "--json"]);
    const { logins } = JSON.parse(listed.stdout) as { logins: Array<{ login_id: string }> };
    expect(logins).toHaveLength(4);
  });

  it("20 refreshes with one token get one successor; the successor works; a replay after the grace window ends the login", async () => {
    const paths = profileWith("gateway: { port: 1 }\ndashboard: { auth: { grace: 1 } }\n");
    const dashboard = await startDashboard(paths.home);
    const first = dashboard.login as DashboardLogin;

    // The wake burst: every tab of a device refreshes with the token it holds, at once.
    const burst = await Promise.all(Array.from({ length: 20 }, () => exchange(dashboard.url, first.refresh)));
    const answers = await Promise.all(
      burst.map(async (r) => ({ status: r.status, body: (await r.json()) as TokenAnswer })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const successors = new Set(answers.map((a) => a.body.refresh_token));
    const accesses = new Set(answers.map((a) => a.body.access_token));
    expect(successors.size).toBe(1);
    expect(accesses.size).toBe(1);
    const [successor] = [...successors] as [string];
    const [access] = [...accesses] as [string];
    expect(successor).not.toBe(first.refresh);
    expect(answers[0]?.body.expires_in).toBeGreaterThan(800);
    // The login stays valid, with the new access token and with the first one.
    expect((await fetch(`${dashboard.url}/api/overview`, { headers: bearer(access) })).status).toBe(200);
    expect((await fetch(`${dashboard.url}/api/overview`, { headers: bearer(first.access) })).status).toBe(
      200,
    );

    // The successor works: it rotates to a third token.
    const next = await exchange(dashboard.url, successor);
    expect(next.status).toBe(200);
    const third = (await next.json()) as TokenAnswer;
    expect(third.refresh_token).not.toBe(successor);
    expect(
      (await fetch(`${dashboard.url}/api/overview`, { headers: bearer(third.access_token) })).status,
    ).toBe(200);

    // The first token, rotated over a second ago, comes back: a replay. It ends the whole login.
    await sleep(1_300);
    const replay = await exchange(dashboard.url, first.refresh);
    expect(replay.status).toBe(401);
    const refused = (await replay.json()) as TokenAnswer;
    expect(refused.error?.code).toBe("login_replay");
    expect(refused.error?.message).toMatch(/past the 1 s grace window/);
    expect((await exchange(dashboard.url, third.refresh_token)).status).toBe(401);
    const ended = await fetch(`${dashboard.url}/api/overview`, { headers: bearer(third.access_token) });
    expect(ended.status).toBe(401);
    expect(((await ended.json()) as TokenAnswer).error?.message).toMatch(/revoked .*replayed/);

    // Told in the audit trail, with the replay and the revocation.
    const trail = readFileSync(join(paths.logs, "events.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; layer: string; source: string });
    const types = trail.filter((l) => l.layer === "dashboard").map((l) => l.type);
    expect(types).toEqual(
      expect.arrayContaining(["login_created", "login_replay", "login_revoked", "login_refused"]),
    );
    expect(trail.find((l) => l.type === "login_replay")?.source).toBe("dashboard");
    const events = await tenaxAsync(paths.home, ["events", "--layer", "dashboard", "--json"]);
    expect(events.stdout).toContain("login_replay");
  });

  it("the cookie gate renews an expired session by itself, on pages and API routes alike", async () => {
    const paths = profileWith("gateway: { port: 1 }\ndashboard: { auth: { access_ttl: 1, grace: 5 } }\n");
    const dashboard = await startDashboard(paths.home);
    const login = dashboard.login as DashboardLogin;
    await sleep(1_300);
    // The access cookie has expired (a browser would have dropped it); the refresh cookie renews it.
    const api = await fetch(`${dashboard.url}/api/overview`, { headers: { cookie: login.cookie } });
    expect(api.status).toBe(200);
    const renewed = loginOfCookies(login.link, api.headers.getSetCookie());
    expect(renewed.refresh).not.toBe(login.refresh);
    expect(api.headers.getSetCookie().join("\n")).toMatch(/HttpOnly; SameSite=Lax/);
    // A page load with only the refresh cookie, at the same moment (another tab): the same successor.
    const page = await fetch(`${dashboard.url}/`, { headers: { cookie: `tenax_refresh=${login.refresh}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("app.js");
    expect(loginOfCookies(login.link, page.headers.getSetCookie()).refresh).toBe(renewed.refresh);
    // The renewed cookies work on their own.
    const later = await fetch(`${dashboard.url}/api/sessions`, { headers: { cookie: renewed.cookie } });
    expect(later.status).toBe(200);
    expect(later.headers.getSetCookie()).toEqual([]);
  });

  it("a client that keeps failing is refused for a while; a revoked login ends at once, the page says why and drops its cookies", async () => {
    const paths = profileWith("gateway: { port: 1 }\n");
    const dashboard = await startDashboard(paths.home);
    const guess = (n: number) =>
      fetch(`${dashboard.url}/auth/link?token=${"A".repeat(42)}${n % 10}`, { redirect: "manual" });
    for (let i = 0; i < 10; i++) expect((await guess(i)).status).toBe(401);
    const limited = await guess(10);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await limited.json()) as TokenAnswer).error?.message).toMatch(/10 failed login attempts/);

    const login = dashboard.login as DashboardLogin;
    const revoked = await tenaxAsync(paths.home, [
      "dashboard",
      "logins",
      "revoke",
      JSON.parse((await tenaxAsync(paths.home, ["dashboard", "logins", "--json"])).stdout).logins[0].login_id,
    ]);
    expect(revoked.status, revoked.stderr).toBe(0);
    // Revoked in the store, so at once in the dashboard process too (another process did it).
    const res = await fetch(`${dashboard.url}/api/overview`, {
      headers: { cookie: login.cookie, "x-forwarded-for": "198.51.100.7" },
    });
    // From a loopback proxy, the client is the address it forwards: not the one that was limited.
    expect(res.status).toBe(401);
    expect(((await res.json()) as TokenAnswer).error?.message).toMatch(/revoked .* by the operator/);
    // The API keeps the cookies, so the page it sends to "/" can say why; the page drops them.
    expect(res.headers.getSetCookie()).toEqual([]);
    const page = await fetch(`${dashboard.url}/`, {
      headers: { cookie: login.cookie, "x-forwarded-for": "198.51.100.7" },
    });
    expect(page.status).toBe(401);
    expect(await page.text()).toMatch(/revoked .* by the operator/);
    expect(page.headers.getSetCookie().join("\n")).toMatch(/tenax_session=; Max-Age=0/);
    // The limited client is still refused, before its credential is even read.
    expect((await fetch(`${dashboard.url}/api/overview`, { headers: { cookie: login.cookie } })).status).toBe(
      429,
    );
  });

  it("behind a TLS proxy: public_url's name is served, links are made on it, cookies are Secure", async () => {
    const paths = profileWith(
      "gateway: { port: 1 }\ndashboard: { public_url: https://agent.example.test }\n",
    );
    const dashboard = await startDashboard(paths.home);
    expect(dashboard.stdout()).toContain("dashboard: log in at https://agent.example.test/auth/link?token=");
    const made = JSON.parse((await tenaxAsync(paths.home, ["dashboard", "link", "--json"])).stdout) as {
      url: string;
    };
    // As the proxy passes requests on: to the dashboard's port, with the public name in Host.
    const viaProxy = (method: string, path: string, headers: Record<string, string> = {}) =>
      rawRequest(dashboard.url, method, path, { headers: { host: "agent.example.test", ...headers } });
    const res = await viaProxy("GET", new URL(made.url).pathname + new URL(made.url).search);
    expect(res.status).toBe(303);
    const cookies = [res.headers["set-cookie"] ?? []].flat();
    expect(cookies).toHaveLength(2);
    for (const c of cookies) expect(c).toMatch(/; HttpOnly; Secure; SameSite=Lax$/);
    const login = loginOfCookies(made.url, cookies);
    expect((await viaProxy("GET", "/api/overview", { cookie: login.cookie })).status).toBe(200);
    const foreign = await viaProxy("GET", "/api/overview", {
      host: "evil.example.test",
      cookie: login.cookie,
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toContain("host_not_allowed");
    // A foreign page may not post the logout; the proxy's own origin may.
    const cross = await viaProxy("POST", "/auth/logout", {
      origin: "https://evil.example.test",
      cookie: login.cookie,
    });
    expect(cross.status).toBe(403);
    expect(cross.body).toContain("origin_not_allowed");
    const out = await viaProxy("POST", "/auth/logout", {
      origin: "https://agent.example.test",
      cookie: login.cookie,
    });
    expect(out.status).toBe(303);
    expect((await viaProxy("GET", "/api/overview", { cookie: login.cookie })).status).toBe(401);
  });
});
