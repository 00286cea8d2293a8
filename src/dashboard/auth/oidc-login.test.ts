// The dashboard's OIDC login against a real issuer (oidc-provider) over real HTTP on 127.0.0.1:
// openid-client is not mocked; the browser is a cookie jar that follows the provider's redirects.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, test } from "vitest";
import { startIssuer, type TestAccount, type TestIssuer } from "../../../test/helpers/oidc-provider.js";
import { TenaxError } from "../../core/errors.js";
import { OidcLogin } from "./oidc-login.js";
import { type OidcRefusal, type OidcVouched, parsePending } from "./oidc-outcomes.js";
import type { OidcSettings } from "./oidc-settings.js";

const REDIRECT = "http://127.0.0.1:9/auth/oidc/callback";
const ALICE: TestAccount = {
  sub: "alice",
  email: "alice@example.com",
  email_verified: true,
  name: "Alice A",
};
const BOB: TestAccount = { sub: "bob", email: "bob@example.com", email_verified: false, name: "Bob B" };
const CAROL: TestAccount = { sub: "carol" };
const ACCOUNTS = [ALICE, BOB, CAROL];

function issuerFor(options: { claims_at_userinfo_only?: boolean } = {}): Promise<TestIssuer> {
  return startIssuer({ redirect_uris: [REDIRECT], accounts: ACCOUNTS, ...options });
}

function loginAt(issuer: TestIssuer, settings: Partial<OidcSettings> = {}): OidcLogin {
  return new OidcLogin({
    issuer: issuer.issuer,
    client_id: issuer.client_id,
    client_secret: issuer.client_secret,
    allowed: ["alice@example.com"],
    timeout_ms: 5_000,
    ...settings,
  });
}

function vouched<T extends OidcVouched>(result: T | OidcRefusal): T {
  if (!result.ok) throw new Error(`refused: ${result.reason}: ${result.message}`);
  return result;
}

function refused<T extends { ok: true }>(result: T | OidcRefusal): OidcRefusal {
  if (result.ok) throw new Error(`not refused: ${JSON.stringify(result)}`);
  return result;
}

/** begin, the provider logs in `sub` (as a browser would), and the callback URL it sent back. */
async function callbackFor(issuer: TestIssuer, login: OidcLogin, sub: string | null) {
  const begun = await login.begin(REDIRECT);
  if (!begun.ok) throw new Error(`begin refused: ${begun.message}`);
  issuer.loginAs(sub);
  return { begun, callback: await issuer.browse(begun.url, REDIRECT) };
}

async function logIn(issuer: TestIssuer, login: OidcLogin, sub: string) {
  const { begun, callback } = await callbackFor(issuer, login, sub);
  return login.finish(callback, begun.pending, REDIRECT);
}

describe("OidcLogin.begin and finish", () => {
  test("a full login yields the user the provider vouched for, and a refresh token", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer);
    const begun = await login.begin(REDIRECT);
    if (!begun.ok) throw new Error(begun.message);
    const asked = begun.url.searchParams;
    expect(begun.url.origin).toBe(issuer.issuer);
    expect(asked.get("code_challenge_method")).toBe("S256");
    expect(asked.get("state")).toBe(begun.pending.state);
    expect(asked.get("nonce")).toBe(begun.pending.nonce);
    expect(asked.get("scope")).toBe("openid email profile offline_access");
    expect(asked.get("prompt")).toBe("consent");
    // What the caller keeps survives a round trip through JSON (a cookie, a record).
    expect(parsePending(JSON.parse(JSON.stringify(begun.pending)))).toEqual(begun.pending);

    const callback = await issuer.browse(begun.url, REDIRECT);
    const before = Date.now();
    const done = vouched(await login.finish(callback, begun.pending, REDIRECT));
    expect(done.user).toEqual({
      subject: "alice",
      email: "alice@example.com",
      email_verified: true,
      name: "Alice A",
    });
    expect(done.refresh_token).toMatch(/^\S{20,}$/);
    // The provider's access tokens last an hour.
    expect(done.expires_at).toBeGreaterThanOrEqual(before + 3_590_000);
    expect(done.expires_at).toBeLessThanOrEqual(Date.now() + 3_600_000);
    // A login code works once: the same callback again is refused by the provider.
    const again = refused(await login.finish(callback, begun.pending, REDIRECT));
    expect(again.reason).toBe("rejected");
    expect(again.message).toContain("invalid_grant");
  });

  test("the callback as a proxy showed it (another host) is read against the redirect URI given", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer);
    const { begun, callback } = await callbackFor(issuer, login, "alice");
    const seen = new URL(`${callback.pathname}${callback.search}`, "http://10.1.2.3:8080");
    expect(vouched(await login.finish(seen, begun.pending, REDIRECT)).user.subject).toBe("alice");
  });

  test("allowed matches a subject exactly or a verified email in any case", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer, { allowed: ["ALICE@Example.COM", "carol"] });
    expect(vouched(await logIn(issuer, login, "alice")).user.subject).toBe("alice");
    const carol = vouched(await logIn(issuer, login, "carol"));
    expect(carol.user).toEqual({ subject: "carol", email: null, email_verified: false, name: null });
  });

  test("a user not in allowed is refused, naming them and how to let them in", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer, { allowed: ["alice@example.com"] });
    const carol = refused(await logIn(issuer, login, "carol"));
    expect(carol).toMatchObject({ action: "finish", reason: "not_allowed", transient: false });
    expect(carol.message).toBe(
      `the OIDC provider at ${issuer.issuer} vouched for subject carol, who is not in the dashboard's allowed list`,
    );
    expect(carol.hint).toContain("add their subject carol to allowed");
  });

  test("an email the provider does not mark verified does not count, and the refusal says so", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer, { allowed: ["bob@example.com"] });
    const bob = refused(await logIn(issuer, login, "bob"));
    expect(bob.reason).toBe("not_allowed");
    expect(bob.message).toContain("bob@example.com (subject bob)");
    expect(bob.message).toContain("not marked verified");
    expect(bob.hint).toBe("to let them in, add their subject bob to allowed");
  });

  test("a tampered or missing state is refused before the code is redeemed", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer);
    const { begun, callback } = await callbackFor(issuer, login, "alice");
    const requests = issuer.tokenRequests();
    const tampered = new URL(callback);
    tampered.searchParams.set("state", `${begun.pending.state.slice(0, -1)}x`);
    const missing = new URL(callback);
    missing.searchParams.delete("state");
    for (const url of [tampered, missing]) {
      const refusal = refused(await login.finish(url, begun.pending, REDIRECT));
      expect(refusal).toMatchObject({ action: "finish", reason: "state", transient: false });
    }
    // A callback from another login (its own state and code) does not finish this one either.
    const other = await callbackFor(issuer, login, "alice");
    expect(refused(await login.finish(other.callback, begun.pending, REDIRECT)).reason).toBe("state");
    expect(issuer.tokenRequests()).toBe(requests);
    // The code was never spent: the untouched callback still logs in.
    expect(vouched(await login.finish(callback, begun.pending, REDIRECT)).user.subject).toBe("alice");
  });

  test("a login the provider denies is refused with the provider's error", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer);
    const { begun, callback } = await callbackFor(issuer, login, null);
    expect(callback.searchParams.get("error")).toBe("access_denied");
    const refusal = refused(await login.finish(callback, begun.pending, REDIRECT));
    expect(refusal).toMatchObject({ reason: "denied", transient: false });
    expect(refusal.message).toBe(
      `the OIDC provider at ${issuer.issuer} did not log you in: access_denied (the test denied this login)`,
    );
  });

  test("an ID token without the email: the userinfo endpoint supplies it", async () => {
    const issuer = await issuerFor({ claims_at_userinfo_only: true });
    const login = loginAt(issuer);
    const done = vouched(await logIn(issuer, login, "alice"));
    expect(done.user).toEqual({
      subject: "alice",
      email: "alice@example.com",
      email_verified: true,
      name: "Alice A",
    });
  });
});

describe("OidcLogin.recheck", () => {
  test("answers the provider's new refresh token; 20 concurrent rechecks with one token are one request", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer);
    const first = vouched(await logIn(issuer, login, "alice")).refresh_token;
    if (first === null) throw new Error("no refresh token");
    const requests = issuer.tokenRequests();
    const all = await Promise.all(Array.from({ length: 20 }, () => login.recheck(first)));
    expect(issuer.tokenRequests() - requests).toBe(1);
    const tokens = new Set(all.map((r) => vouched(r).refresh_token));
    expect(tokens.size).toBe(1);
    const [second = ""] = tokens;
    expect(second).not.toBe(first);
    expect(all.map((r) => vouched(r).user.subject)).toEqual(Array(20).fill("alice"));

    // Once settled, a recheck asks again: the new token works, and the old one, spent, is refused.
    const third = vouched(await login.recheck(second));
    expect(third.refresh_token).not.toBe(second);
    expect(issuer.tokenRequests() - requests).toBe(2);
    const replay = refused(await login.recheck(first));
    expect(replay).toMatchObject({ action: "recheck", reason: "rejected", transient: false });
    expect(replay.message).toContain("invalid_grant");
  });

  test("a user taken out of allowed is refused at the next recheck", async () => {
    const issuer = await issuerFor();
    const token = vouched(await logIn(issuer, loginAt(issuer), "alice")).refresh_token ?? "";
    const narrower = loginAt(issuer, { allowed: ["carol"] });
    const refusal = refused(await narrower.recheck(token));
    expect(refusal).toMatchObject({ action: "recheck", reason: "not_allowed", transient: false });
    expect(refusal.message).toContain("alice@example.com (subject alice)");
  });

  test("a held token endpoint: refused in about timeout_ms while the process keeps answering", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer, { timeout_ms: 2_000 });
    const token = vouched(await logIn(issuer, login, "alice")).refresh_token ?? "";
    const health = createServer((_req, res) => res.end("ok"));
    await new Promise<void>((resolve) => health.listen(0, "127.0.0.1", resolve));
    const healthUrl = `http://127.0.0.1:${(health.address() as AddressInfo).port}/health`;
    try {
      issuer.holdToken(10_000);
      const requests = issuer.tokenRequests();
      const started = Date.now();
      let settled = false;
      const rechecked = login.recheck(token).finally(() => {
        settled = true;
      });
      // Meanwhile: a begin (discovery is cached) and the stand-in for /health answer at once.
      const beginStarted = Date.now();
      expect((await login.begin(REDIRECT)).ok).toBe(true);
      const beginMs = Date.now() - beginStarted;
      const latencies: number[] = [];
      while (!settled) {
        const sent = Date.now();
        expect(await (await fetch(healthUrl)).text()).toBe("ok");
        latencies.push(Date.now() - sent);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const refusal = refused(await rechecked);
      const elapsed = Date.now() - started;

      expect(refusal).toMatchObject({ action: "recheck", reason: "timeout", transient: true });
      expect(refusal.message).toBe(
        `the OIDC provider at ${issuer.issuer} did not answer within 2000 ms (the refresh of the login's tokens)`,
      );
      expect(elapsed).toBeGreaterThanOrEqual(1_950);
      expect(elapsed).toBeLessThan(3_000);
      expect(issuer.tokenRequests() - requests).toBe(1);
      expect(beginMs).toBeLessThan(100);
      expect(latencies.length).toBeGreaterThanOrEqual(10);
      expect(Math.max(...latencies)).toBeLessThan(100);
    } finally {
      health.closeAllConnections();
      await new Promise<void>((resolve) => health.close(() => resolve()));
    }
  });
});

describe("OidcLogin discovery and settings", () => {
  test("a failed discovery is tried again by the next login", async () => {
    const issuer = await issuerFor();
    const login = loginAt(issuer);
    issuer.failDiscovery(1);
    const refusal = refused(await login.begin(REDIRECT));
    expect(refusal).toMatchObject({ action: "begin", reason: "provider_error", transient: true });
    expect(refusal.message).toBe(
      `the OIDC provider at ${issuer.issuer} answered its discovery document with HTTP 503`,
    );
    expect((await login.begin(REDIRECT)).ok).toBe(true);
  });

  test("a provider nothing listens for is unreachable, and says why", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const login = new OidcLogin({
      issuer: `http://127.0.0.1:${port}`,
      client_id: "c",
      allowed: ["alice"],
      timeout_ms: 2_000,
    });
    const refusal = refused(await login.begin(REDIRECT));
    expect(refusal).toMatchObject({ reason: "unreachable", transient: true });
    expect(refusal.message).toBe(
      `could not connect to the OIDC provider at http://127.0.0.1:${port} for its discovery document (ECONNREFUSED)`,
    );
  });

  test("settings are checked when the login is made: https, or http on loopback only", () => {
    const base = { client_id: "c", allowed: ["alice"], timeout_ms: 1_000 };
    const code = (settings: OidcSettings): string | null => {
      try {
        new OidcLogin(settings);
        return null;
      } catch (error) {
        return TenaxError.isInstance(error) ? error.code : String(error);
      }
    };
    expect(code({ ...base, issuer: "https://id.example.com" })).toBeNull();
    expect(code({ ...base, issuer: "http://127.0.0.1:8080" })).toBeNull();
    expect(code({ ...base, issuer: "http://localhost:8080" })).toBeNull();
    expect(code({ ...base, issuer: "http://[::1]:8080" })).toBeNull();
    expect(code({ ...base, issuer: "http://id.example.com" })).toBe("oidc_issuer_insecure");
    expect(code({ ...base, issuer: "http://127.0.0.1.example.com" })).toBe("oidc_issuer_insecure");
    expect(code({ ...base, issuer: "ftp://id.example.com" })).toBe("oidc_issuer_insecure");
    expect(code({ ...base, issuer: "id.example.com" })).toBe("oidc_issuer_invalid");
    expect(code({ ...base, issuer: "https://id.example.com", allowed: [] })).toBe("oidc_allowed_empty");
    expect(code({ ...base, issuer: "https://id.example.com", timeout_ms: 0 })).toBe("oidc_timeout_invalid");
  });

  test("parsePending takes only what begin made", () => {
    const pending = { state: "s", nonce: "n", code_verifier: "v".repeat(43) };
    expect(parsePending(pending)).toEqual(pending);
    expect(parsePending({ ...pending, extra: 1 })).toBeNull();
    expect(parsePending({ ...pending, code_verifier: "short" })).toBeNull();
    expect(parsePending("s")).toBeNull();
  });
});
