// The OIDC half of the dashboard's login: send the browser to the provider (authorization code
// flow with PKCE S256, state and nonce), take the callback back to a user the provider vouches for,
// and recheck that user later with the provider's refresh token. Only users in `allowed` pass.
// Its contract:
// - nothing here throws for the provider: every failure (an error answer, a bad ID token, no
//   connection, no answer within timeout_ms) is a refusal (oidc-outcomes.ts) with a message that
//   names the provider and the request, and a hint; a bad setting throws a TenaxError at construction;
// - every request to the provider, discovery included, is bounded by timeout_ms (openid-client's
//   per-request AbortSignal.timeout), and waits on the event loop, so a slow provider delays only
//   the login or recheck waiting for it;
// - discovery is done on first use, shared by the logins that wait for it, kept once it succeeds,
//   and tried again by the next login after it failed;
// - concurrent rechecks with one refresh token in this process are one request to the provider
//   (a provider that rotates refresh tokens would take a second as a replay); across processes the
//   caller's store coalesces them.
// Who `allowed` lets in, and why an unverified email does not count: oidc-settings.ts.
// The ID token's claims (issuer, audience, authorized party, expiry, nonce) are checked by
// openid-client; its signature is not, since it comes straight from the token endpoint over TLS
// (OIDC Core 3.1.3.7), which also keeps providers that sign with the client secret working.
import {
  allowInsecureRequests,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  type Configuration,
  calculatePKCECodeChallenge,
  discovery,
  fetchUserInfo,
  type IDToken,
  randomNonce,
  randomPKCECodeVerifier,
  randomState,
  refreshTokenGrant,
  skipSubjectCheck,
  type TokenEndpointResponse,
  type TokenEndpointResponseHelpers,
  type UserInfoResponse,
} from "openid-client";
import { type Clock, systemClock } from "../../core/deps.js";
import { TenaxError } from "../../core/errors.js";
import { hashToken, sameHash } from "./login-tokens.js";
import {
  notAllowedRefusal,
  type OidcBegun,
  type OidcPending,
  type OidcRechecked,
  type OidcRefusal,
  type OidcStep,
  type OidcUser,
  type OidcVouched,
  providerRefusal,
  type RefusalContext,
  stateRefusal,
} from "./oidc-outcomes.js";
import { type CheckedSettings, checkSettings, clientAuth, type OidcSettings } from "./oidc-settings.js";

export interface OidcDeps {
  clock: Clock;
}

type Tokens = TokenEndpointResponse & TokenEndpointResponseHelpers;
type Claims = Partial<IDToken & UserInfoResponse>;

const SCOPE = "openid email profile";

export class OidcLogin {
  private readonly checked: CheckedSettings;
  private discovered: Promise<Configuration> | null = null;
  /** Rechecks under way, by the SHA-256 of their refresh token. */
  private readonly rechecks = new Map<string, Promise<OidcRechecked | OidcRefusal>>();

  /** Throws a TenaxError for a bad setting (an issuer not https nor on loopback, no one allowed). */
  constructor(
    private readonly settings: OidcSettings,
    private readonly deps: OidcDeps = { clock: systemClock },
  ) {
    this.checked = checkSettings(settings);
  }

  /** The URL to send the browser to, and what to keep until its callback comes back. */
  async begin(redirectUri: string): Promise<OidcBegun | OidcRefusal> {
    try {
      const config = await this.configuration();
      const pending: OidcPending = {
        state: randomState(),
        nonce: randomNonce(),
        code_verifier: randomPKCECodeVerifier(),
      };
      // A refresh token is what a recheck needs; OIDC asks for it with offline_access, which needs
      // prompt=consent (Core 11). A provider that lists no offline_access (Google) is not asked.
      const offline = config.serverMetadata().scopes_supported?.includes("offline_access") === true;
      const url = buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: offline ? `${SCOPE} offline_access` : SCOPE,
        ...(offline ? { prompt: "consent" } : {}),
        code_challenge: await calculatePKCECodeChallenge(pending.code_verifier),
        code_challenge_method: "S256",
        state: pending.state,
        nonce: pending.nonce,
      });
      return { ok: true, url, pending };
    } catch (error) {
      // Discovery failed, or what it found has no authorization endpoint.
      return providerRefusal(error, "discovery", this.context("begin"));
    }
  }

  /**
   * Take the callback (`currentUrl`, as the request came; its query is read against `redirectUri`,
   * the address the provider was given, whatever host or scheme a proxy showed this process) to the
   * user it logs in, or a refusal.
   */
  async finish(
    currentUrl: URL,
    pending: OidcPending,
    redirectUri: string,
  ): Promise<OidcVouched | OidcRefusal> {
    const context = this.context("finish");
    const state = currentUrl.searchParams.get("state");
    if (state === null || !sameHash(hashToken(state), hashToken(pending.state))) return stateRefusal(context);
    const callback = new URL(redirectUri);
    callback.search = currentUrl.search;
    let step: OidcStep = "discovery";
    try {
      const config = await this.configuration();
      step = "code";
      const tokens = await authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: pending.code_verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
      step = "userinfo";
      const vouched = await this.vouched(config, tokens, context);
      return vouched.ok ? { ...vouched, refresh_token: tokens.refresh_token ?? null } : vouched;
    } catch (error) {
      return providerRefusal(error, step, context);
    }
  }

  /**
   * Ask the provider again, with the login's refresh token, whether it still vouches for the user,
   * and check them against `allowed` again. Concurrent calls with one token share one request. A
   * refusal that is not `transient` means the login is over; `user.subject` is the login's own (the
   * provider bound the token to it), which a careful caller may check against what it kept.
   */
  recheck(refreshToken: string): Promise<OidcRechecked | OidcRefusal> {
    const key = hashToken(refreshToken);
    const running = this.rechecks.get(key);
    if (running) return running;
    const started = this.refresh(refreshToken).finally(() => this.rechecks.delete(key));
    this.rechecks.set(key, started);
    return started;
  }

  private async refresh(refreshToken: string): Promise<OidcRechecked | OidcRefusal> {
    const context = this.context("recheck");
    let step: OidcStep = "discovery";
    try {
      const config = await this.configuration();
      step = "refresh";
      const tokens = await refreshTokenGrant(config, refreshToken);
      step = "userinfo";
      const vouched = await this.vouched(config, tokens, context);
      // A provider that does not rotate answers no refresh token: the one presented stays good.
      return vouched.ok ? { ...vouched, refresh_token: tokens.refresh_token ?? refreshToken } : vouched;
    } catch (error) {
      return providerRefusal(error, step, context);
    }
  }

  /** The user the tokens vouch for, if allowed; the userinfo endpoint fills in an email the ID token lacks. */
  private async vouched(
    config: Configuration,
    tokens: Tokens,
    context: RefusalContext,
  ): Promise<Omit<OidcVouched, "refresh_token"> | OidcRefusal> {
    const idToken = tokens.claims();
    let claims: Claims = idToken ?? {};
    if (typeof claims.email !== "string" && config.serverMetadata().userinfo_endpoint !== undefined) {
      // With the ID token's subject expected; without one (a refresh may answer none), the access
      // token just issued for this login is what names the user.
      const info = await fetchUserInfo(config, tokens.access_token, idToken?.sub ?? skipSubjectCheck);
      claims = { ...claims, ...info };
    }
    if (typeof claims.sub !== "string" || claims.sub === "") {
      throw new TenaxError("oidc_no_subject", "no ID token and no userinfo endpoint name the user");
    }
    const user = userOf(claims.sub, claims);
    const { allowlist } = this.checked;
    if (!allowlist.allows(user)) return notAllowedRefusal(context, user, allowlist.listsEmail(user));
    const expiresIn = tokens.expiresIn();
    const expires_at =
      expiresIn !== undefined
        ? this.deps.clock.now() + expiresIn * 1000
        : idToken !== undefined
          ? idToken.exp * 1000
          : null;
    return { ok: true, user, expires_at };
  }

  /** The provider's configuration: discovered on first use, kept once found, sought again after a failure. */
  private configuration(): Promise<Configuration> {
    if (this.discovered !== null) return this.discovered;
    const { client_id, client_secret, timeout_ms } = this.settings;
    const found = discovery(this.checked.issuer, client_id, client_secret, clientAuth(client_secret), {
      timeout: timeout_ms / 1000,
      execute: this.checked.insecure ? [allowInsecureRequests] : [],
    });
    this.discovered = found;
    found.catch(() => {
      if (this.discovered === found) this.discovered = null;
    });
    return found;
  }

  private context(action: RefusalContext["action"]): RefusalContext {
    return { action, issuer: this.settings.issuer, timeout_ms: this.settings.timeout_ms };
  }
}

function userOf(subject: string, claims: Claims): OidcUser {
  return {
    subject,
    email: typeof claims.email === "string" ? claims.email : null,
    email_verified: claims.email_verified === true,
    name: typeof claims.name === "string" ? claims.name : null,
  };
}
