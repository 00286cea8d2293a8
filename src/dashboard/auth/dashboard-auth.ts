// Who may open the dashboard: the login of each request, found from its credentials in this order:
// a bearer access token (a desktop app, a script), the `tenax_session` cookie, and, when that one
// is missing or expired, the `tenax_refresh` cookie, which is rotated on the spot and answered with
// new cookies (the cookie gate's transparent refresh). Mode `none` lets every request through
// (loopback only, checked where the port is opened).
//
// The logins live in the profile's store (login-book.ts), opened writable here on first use: a
// dashboard whose store cannot be opened still serves its login page, and answers the rest with a
// 503 naming the store. Every change of a login, and each refused credential with the address it
// came from, goes to the audit trail (logs/events.jsonl, source "dashboard") and to the page's own
// event list; a client that keeps failing is refused for a while (failure-limit.ts).
import type { AuditTrail } from "../../agent/audit-trail.js";
import type { DashboardAuthConfig } from "../../config/dashboard-schema.js";
import { errorMessage } from "../../core/errors.js";
import type { HttpError } from "../../http/http-error.js";
import type { StorePort } from "../../store/port.js";
import { dashboardError } from "../store-view.js";
import { clearedCookies, loginCookies, readLoginCookies } from "./cookies.js";
import { FailureLimit } from "./failure-limit.js";
import { LoginBook, type ProviderAnswer } from "./login-book.js";
import type { LoginEvent, LoginRefusal } from "./login-outcomes.js";
import { OidcLogin } from "./oidc-login.js";
import type { OidcVouched } from "./oidc-outcomes.js";

/** Failures a client may have per window on the login routes and credentials before a 429. */
export const FAILURES_PER_WINDOW = 10;
export const FAILURE_WINDOW_MS = 60_000;

export interface DashboardAuthOptions {
  /** The auth section in force now (config.yaml may be edited while the dashboard runs). */
  config: () => DashboardAuthConfig;
  /** The profile's writable store; opened on the first request that needs a login. */
  openStore: () => Promise<StorePort>;
  releaseStore?: (store: StorePort) => Promise<void>;
  audit?: AuditTrail | null;
  /** The page's own event list (the events of this process, beside the gateway's). */
  publish?: (event: LoginEvent & { client?: string }) => void;
  now: () => number;
}

/** The request's facts the gate reads. */
export interface Presented {
  authorization: string | undefined;
  cookie: string | undefined;
  /** The client's address (failure-limit.ts clientOf). */
  client: string;
  /** Reached over TLS: the cookies it is given are Secure. */
  secure: boolean;
  userAgent: string | null;
}

export type Identity =
  | { ok: true; login_id: string | null; cookies: string[] }
  | { ok: false; refusal: LoginRefusal | null; cookies: string[] };

export class DashboardAuth {
  private book: Promise<LoginBook> | null = null;
  private store: StorePort | null = null;
  private storeTrouble: { message: string; hint: string } | null = null;
  /** The OIDC client of the settings in force, made again when they change. */
  private provider: { settings: string; login: OidcLogin } | null = null;
  readonly limit: FailureLimit;

  constructor(private readonly options: DashboardAuthOptions) {
    this.limit = new FailureLimit({
      max: FAILURES_PER_WINDOW,
      windowMs: FAILURE_WINDOW_MS,
      now: options.now,
    });
  }

  get mode(): DashboardAuthConfig["mode"] {
    return this.options.config().mode;
  }

  /**
   * The login book, on the store opened the first time it is asked for; a store that does not open
   * is a 503 naming it, and the next request tries again.
   */
  async logins(): Promise<LoginBook> {
    if (this.book === null) {
      const opening = this.openBook();
      this.book = opening;
      opening.catch(() => {
        if (this.book === opening) this.book = null;
      });
    }
    try {
      const book = await this.book;
      this.storeTrouble = null;
      return book;
    } catch (error) {
      this.storeTrouble = {
        message: `the dashboard's logins are kept in the profile's store, which could not be opened: ${errorMessage(error)}`,
        hint: "tenax status names what is wrong with the store, and the command that mends it",
      };
      throw dashboardError(503, "store_unavailable", this.storeTrouble.message, this.storeTrouble.hint);
    }
  }

  /**
   * Why no login can be made now, when the last try to open the store failed: the login page says
   * so, instead of sending the user to a link command that would fail the same way.
   */
  storeProblem(): { message: string; hint: string } | null {
    return this.storeTrouble;
  }

  private async openBook(): Promise<LoginBook> {
    const store = await this.options.openStore();
    this.store = store;
    const auth = this.options.config();
    return new LoginBook({
      store,
      deps: { clock: { now: this.options.now } },
      accessTtlMs: auth.access_ttl * 1000,
      refreshTtlMs: auth.refresh_ttl * 1000,
      graceMs: auth.grace * 1000,
      onEvent: (event) => {
        // A refusal is told by the gate, which knows where it came from.
        if (event.type !== "login_refused") this.tell(event);
      },
      recheck: (token) => this.recheck(token),
      ...(auth.mode === "oidc" ? { relogin: "log in again at /auth/login" } : {}),
    });
  }

  /** The OIDC client (mode oidc), made on first use with the settings in force. */
  oidc(): OidcLogin {
    const settings = this.options.config().oidc;
    if (settings === undefined)
      throw dashboardError(
        404,
        "oidc_not_configured",
        "this dashboard has no OIDC provider (dashboard.auth.oidc)",
        "set dashboard.auth.mode oidc with dashboard.auth.oidc: { issuer, client_id, client_secret, allowed }",
      );
    const key = JSON.stringify(settings);
    if (this.provider === null || this.provider.settings !== key)
      this.provider = {
        settings: key,
        login: new OidcLogin(
          { ...settings, timeout_ms: settings.timeout * 1000 },
          { clock: { now: this.options.now } },
        ),
      };
    return this.provider.login;
  }

  /** Ask the provider again whether it vouches for a login's user (at each rotation). */
  private async recheck(token: string): Promise<ProviderAnswer> {
    const answer = await this.oidc().recheck(token);
    return answer.ok
      ? { ok: true, refresh_token: answer.refresh_token }
      : { ok: false, transient: answer.transient, message: answer.message };
  }

  /** Who the request is: a login (null in mode none), or why not, with the cookies to set either way. */
  async identify(request: Presented): Promise<Identity> {
    if (this.mode === "none") return { ok: true, login_id: null, cookies: [] };
    const bearer = bearerToken(request.authorization);
    const { session, refresh } = readLoginCookies(request.cookie);
    if (bearer === null && session === null && refresh === null)
      return { ok: false, refusal: null, cookies: [] };
    this.checkLimit(request.client);
    const book = await this.logins();
    if (bearer !== null) {
      const checked = await book.check(bearer);
      if (checked.ok) return { ok: true, login_id: checked.login.login_id, cookies: [] };
      return this.refused(checked, request, []);
    }
    let refused: LoginRefusal | null = null;
    if (session !== null) {
      const checked = await book.check(session);
      if (checked.ok) return { ok: true, login_id: checked.login.login_id, cookies: [] };
      refused = checked;
    }
    if (refresh !== null) {
      const renewed = await book.refresh(refresh);
      if (renewed.ok)
        return {
          ok: true,
          login_id: renewed.login_id,
          cookies: loginCookies(renewed, this.options.now(), request.secure),
        };
      // The provider could not be asked: the login stays, cookies and all, for the next try.
      if (renewed.reason === "provider_unavailable")
        throw dashboardError(503, "identity_provider_unavailable", renewed.message, renewed.hint);
      refused = renewed;
    }
    // An access cookie that expired is routine, and is not counted or told; what follows it is.
    return this.refused(refused, request, clearedCookies(request.secure));
  }

  /**
   * Exchange a refresh token (POST /auth/token); refusals are counted and told, but not a provider
   * that did not answer: the client did nothing wrong, and counting its retries would lock its
   * address (every login behind it) out for the window, as the cookie gate does not.
   */
  async refresh(token: string, request: Presented) {
    this.checkLimit(request.client);
    const renewed = await (await this.logins()).refresh(token);
    if (!renewed.ok && renewed.reason !== "provider_unavailable") this.report(renewed, request);
    return renewed;
  }

  /** Start a login from a one-time link's token (GET /auth/link). */
  async redeem(token: string, request: Presented) {
    this.checkLimit(request.client);
    const redeemed = await (await this.logins()).redeemLink(token, { client: request.userAgent });
    if (!redeemed.ok) this.report(redeemed, request);
    return redeemed;
  }

  /** Start a login for a user the OIDC provider vouched for (its callback). */
  async startOidcLogin(vouched: OidcVouched, request: Presented) {
    const issuer = this.options.config().oidc?.issuer ?? "?";
    const { user } = vouched;
    return (await this.logins()).startLogin({
      madeBy: `oidc ${user.email ?? user.subject}`,
      client: request.userAgent,
      provider: { issuer, subject: user.subject, refresh_token: vouched.refresh_token },
    });
  }

  /** An OIDC login that the provider, or `allowed`, turned down: counted and told. */
  failedOidc(message: string, request: Presented): void {
    this.report(
      {
        ok: false,
        action: "oidc",
        reason: "provider",
        message,
        hint: "",
        login_id: null,
      },
      request,
    );
  }

  /** A 429 for a client past its failures, with when to try again. */
  checkLimit(client: string): void {
    const waitMs = this.limit.retryAfterMs(client);
    if (waitMs <= 0) return;
    const seconds = Math.ceil(waitMs / 1000);
    const error: HttpError = dashboardError(
      429,
      "too_many_failed_logins",
      `${FAILURES_PER_WINDOW} failed login attempts from ${client} within ${FAILURE_WINDOW_MS / 1000} s: refused for ${seconds} s more`,
      "wait, then open a new login link (tenax dashboard link)",
    );
    throw error.withHeaders({ "retry-after": String(seconds) });
  }

  async close(): Promise<void> {
    const store = this.store;
    this.store = null;
    this.book = null;
    if (store !== null) await this.options.releaseStore?.(store);
  }

  private refused(refusal: LoginRefusal | null, request: Presented, cookies: string[]): Identity {
    if (refusal !== null && !(refusal.action === "access" && refusal.reason === "expired"))
      this.report(refusal, request);
    return { ok: false, refusal, cookies };
  }

  private report(refusal: LoginRefusal, request: Presented): void {
    this.limit.fail(request.client);
    this.tell({
      layer: "dashboard",
      type: "login_refused",
      action: refusal.action,
      reason: refusal.reason,
      login_id: refusal.login_id,
      message: `${refusal.message} (from ${request.client})`,
      at: this.options.now(),
      client: request.client,
    });
  }

  private tell(event: LoginEvent & { client?: string }): void {
    if (this.options.audit) auditLoginEvent(this.options.audit, event);
    this.options.publish?.(event);
  }
}

/** A login event's line in the audit trail; a refresh is routine (every access_ttl): no line. */
export function auditLoginEvent(audit: AuditTrail, event: LoginEvent & { client?: string }): void {
  const { layer, type, message, at, ...data } = event;
  if (type !== "login_refreshed") audit.record({ type, layer, message, data }, at);
}

/** The token of an `Authorization: Bearer TOKEN` header, or null. */
export function bearerToken(header: string | undefined): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  return match?.[1] ?? null;
}
