// A real OpenID Connect issuer for tests: oidc-provider on 127.0.0.1 (a free port) with one
// confidential client, accounts the test names, and an interaction that logs in whoever the test
// chose without a form, so `browse` can drive a login by plain HTTP with a cookie jar. Switches
// hold its token endpoint (a slow provider) or fail its discovery; it counts token requests.
// Closed after each test.
import { generateKeyPairSync, type JsonWebKey } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Provider, {
  type Adapter,
  type AdapterFactory,
  type AdapterPayload,
  type Configuration,
} from "oidc-provider";
import { afterEach } from "vitest";

export interface TestAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface IssuerOptions {
  /** Where the client may be sent back to. */
  redirect_uris: string[];
  accounts: TestAccount[];
  /** Whether a refresh answers a new refresh token (the old one is then spent). Default true. */
  rotate_refresh_tokens?: boolean;
  /**
   * Whether the ID token carries only `sub` and the profile claims are at the userinfo endpoint
   * (OIDC Core's rule for the code flow, which some providers follow). Default false: in the ID
   * token, as most providers put them.
   */
  claims_at_userinfo_only?: boolean;
}

export interface TestIssuer {
  /** The issuer identifier: http://127.0.0.1:PORT */
  issuer: string;
  client_id: string;
  client_secret: string;
  /** Who the next interaction logs in (a `sub` of the accounts), or null to deny: access_denied. */
  loginAs(sub: string | null): void;
  /**
   * Be a new browser: GET `url` and follow the provider's redirects (keeping its cookies) until one
   * leads to `redirectUri`, and return that URL (the callback, not fetched).
   */
  browse(url: URL, redirectUri: string): Promise<URL>;
  /** POST /token requests received so far, answered or not. */
  tokenRequests(): number;
  /** Hold every later POST /token for `ms` before the provider sees it (0: stop holding). */
  holdToken(ms: number): void;
  /** Answer the next `n` discovery requests with a 503. */
  failDiscovery(n: number): void;
  close(): Promise<void>;
}

const open: TestIssuer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((issuer) => issuer.close()));
});

// One signing key for every issuer of the run: RSA key generation is the slow part of a start.
let signingKey: JsonWebKey | undefined;
function key(): JsonWebKey {
  signingKey ??= {
    ...generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" }),
    kid: "test",
    use: "sig",
  };
  return signingKey;
}

const DISCOVERY_PATH = "/.well-known/openid-configuration";

export async function startIssuer(options: IssuerOptions): Promise<TestIssuer> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map(options.accounts.map((a) => [a.sub, a]));
  const client = { client_id: "tenax-dashboard", client_secret: "a-client-secret-for-tests-only" };
  let loginAs: string | null = options.accounts[0]?.sub ?? null;
  let tokenRequests = 0;
  let holdMs = 0;
  let failDiscovery = 0;
  const held = new Set<ReturnType<typeof setTimeout>>();

  const configuration: Configuration = {
    clients: [
      {
        ...client,
        redirect_uris: options.redirect_uris,
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
      },
    ],
    adapter: memoryAdapter(),
    jwks: { keys: [key()] },
    cookies: { keys: ["a-cookie-key-for-tests-only"] },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    conformIdTokenClaims: options.claims_at_userinfo_only ?? false,
    rotateRefreshToken: options.rotate_refresh_tokens ?? true,
    features: { devInteractions: { enabled: false } },
    // Set, so the provider does not warn that its defaults are in use.
    ttl: {
      AccessToken: 3_600,
      AuthorizationCode: 60,
      Grant: 3_600,
      IdToken: 3_600,
      Interaction: 600,
      RefreshToken: 86_400,
      Session: 3_600,
    },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: () => ({ ...account }) };
    },
  };
  const provider = new Provider(issuer, configuration);
  const callback = provider.callback();

  // The interaction a login page would be: log in `loginAs`, then grant what the client asked.
  async function interact(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === "login") {
      const result =
        loginAs === null
          ? { error: "access_denied", error_description: "the test denied this login" }
          : { login: { accountId: loginAs } };
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
      return;
    }
    const accountId = details.session?.accountId;
    const clientId = details.params.client_id;
    if (typeof accountId !== "string" || typeof clientId !== "string") {
      throw new Error("consent without a session or a client");
    }
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId, clientId });
    if (!grant) throw new Error(`grant ${details.grantId} not found`);
    const missing = details.prompt.details;
    if (Array.isArray(missing.missingOIDCScope)) grant.addOIDCScope(missing.missingOIDCScope.map(String));
    if (Array.isArray(missing.missingOIDCClaims)) grant.addOIDCClaims(missing.missingOIDCClaims.map(String));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? "/", issuer).pathname;
    if (req.method === "GET" && path === DISCOVERY_PATH && failDiscovery > 0) {
      failDiscovery--;
      res.writeHead(503, { "content-type": "text/plain" }).end("unavailable for the test");
      return;
    }
    if (path.startsWith("/interaction/")) {
      interact(req, res).catch((error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
      });
      return;
    }
    if (req.method === "POST" && path === "/token") {
      tokenRequests++;
      if (holdMs > 0) {
        const timer = setTimeout(() => {
          held.delete(timer);
          if (!res.destroyed) callback(req, res);
        }, holdMs);
        held.add(timer);
        return;
      }
    }
    callback(req, res);
  });

  const handle: TestIssuer = {
    issuer,
    ...client,
    loginAs: (sub) => {
      loginAs = sub;
    },
    browse: async (url, redirectUri) => {
      const jar = new CookieJar();
      let at = url;
      for (let hop = 0; hop < 10; hop++) {
        const response = await fetch(at, { redirect: "manual", headers: { cookie: jar.header(at) } });
        jar.take(response.headers.getSetCookie());
        const location = response.headers.get("location");
        if (response.status < 300 || response.status >= 400 || location === null) {
          throw new Error(`the provider answered ${response.status} at ${at.href}: ${await response.text()}`);
        }
        await response.body?.cancel();
        at = new URL(location, at);
        if (at.href.startsWith(redirectUri)) return at;
      }
      throw new Error(`more than 10 redirects from ${url.href}`);
    },
    tokenRequests: () => tokenRequests,
    holdToken: (ms) => {
      holdMs = ms;
    },
    failDiscovery: (n) => {
      failDiscovery = n;
    },
    close: async () => {
      for (const timer of held) clearTimeout(timer);
      held.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  open.push(handle);
  return handle;
}

/** The few cookie rules the provider's redirects need: name, path prefix, deletion. */
class CookieJar {
  private readonly cookies = new Map<string, { name: string; value: string; path: string }>();

  take(setCookies: string[]): void {
    for (const line of setCookies) {
      const [pair = "", ...attributes] = line.split(";").map((part) => part.trim());
      const eq = pair.indexOf("=");
      if (eq <= 0) continue;
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = "/";
      let gone = value === "";
      for (const attribute of attributes) {
        const [k = "", v = ""] = attribute.split("=");
        if (k.toLowerCase() === "path") path = v;
        if (k.toLowerCase() === "max-age" && Number(v) <= 0) gone = true;
        if (k.toLowerCase() === "expires" && Date.parse(v) <= Date.now()) gone = true;
      }
      const id = `${name};${path}`;
      if (gone) this.cookies.delete(id);
      else this.cookies.set(id, { name, value, path });
    }
  }

  header(url: URL): string {
    return [...this.cookies.values()]
      .filter((c) => url.pathname.startsWith(c.path))
      .map((c) => `${c.name}=${c.value}`)
      .join("; ");
  }
}

/**
 * The provider's store, in memory and one per issuer: its own default is shared by every issuer of
 * the process and warns at each start that it is for development.
 */
function memoryAdapter(): AdapterFactory {
  const rows = new Map<string, { payload: AdapterPayload; expires_at: number }>();
  const live = (key: string): AdapterPayload | undefined => {
    const row = rows.get(key);
    if (row && row.expires_at <= Date.now()) rows.delete(key);
    return row && row.expires_at > Date.now() ? row.payload : undefined;
  };
  return (model): Adapter => {
    const key = (id: string) => `${model}:${id}`;
    const findBy = (match: (payload: AdapterPayload) => boolean) => {
      for (const k of rows.keys()) {
        const payload = k.startsWith(`${model}:`) ? live(k) : undefined;
        if (payload && match(payload)) return payload;
      }
      return undefined;
    };
    return {
      upsert: async (id, payload, expiresIn) => {
        rows.set(key(id), { payload, expires_at: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
      },
      find: async (id) => live(key(id)),
      findByUid: async (uid) => findBy((p) => p.uid === uid),
      findByUserCode: async (userCode) => findBy((p) => p.userCode === userCode),
      consume: async (id) => {
        const payload = live(key(id));
        if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      },
      destroy: async (id) => {
        rows.delete(key(id));
      },
      revokeByGrantId: async (grantId) => {
        for (const [k, row] of rows) if (row.payload.grantId === grantId) rows.delete(k);
      },
    };
  };
}
