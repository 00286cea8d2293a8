// What the dashboard's OIDC login answers: the user a provider vouched for, the values a begun
// login leaves with the browser, and its refusals. A failure of the provider is classified here,
// once, from the error openid-client raised (its class, OAuth error code and HTTP status, never its
// message text), into a refusal in words fit for a 401 body and an audit line, never with a token.
import {
  AuthorizationResponseError,
  ClientError,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
} from "openid-client";
import { z } from "zod";
import { errorMessage } from "../../core/errors.js";

/** The user the provider vouched for. */
export interface OidcUser {
  /** The provider's `sub`: stable and unique at this issuer. */
  subject: string;
  email: string | null;
  /** Whether the provider says it checked that the email is the user's (`email_verified`). */
  email_verified: boolean;
  name: string | null;
}

/**
 * What a begun login leaves with its browser until the callback: small, serializable, and secret
 * (whoever holds it can finish the login), so the caller keeps it in a short-lived HttpOnly cookie
 * or in a store record keyed by a random id, and reads it back with `parsePending`.
 */
export const oidcPending = z.strictObject({
  state: z.string().min(1),
  nonce: z.string().min(1),
  code_verifier: z.string().min(43).max(128),
});
export type OidcPending = z.infer<typeof oidcPending>;

/** A pending value read back (from a cookie, a record), or null if it is not one. */
export function parsePending(value: unknown): OidcPending | null {
  const parsed = oidcPending.safeParse(value);
  return parsed.success ? parsed.data : null;
}

export type OidcBegun = { ok: true; url: URL; pending: OidcPending };

/** A login finished, or rechecked: the provider vouches for `user`, who is allowed. */
export interface OidcVouched {
  ok: true;
  user: OidcUser;
  /**
   * The refresh token to recheck with next time. finish: null when the provider issued none (it
   * lists no `offline_access`, or declined), and then the login cannot be rechecked. recheck: the
   * provider's new one when it rotates them, else the one presented.
   */
  refresh_token: string | null;
  /** When the provider's word runs out (ms): its access token's expiry, else the ID token's; null if neither. */
  expires_at: number | null;
}
export type OidcRechecked = OidcVouched & { refresh_token: string };

/** What was attempted. */
export type OidcAction = "begin" | "finish" | "recheck";
/** Which request to the provider was under way. */
export type OidcStep = "discovery" | "code" | "refresh" | "userinfo";

/**
 * not_allowed: the provider vouched for a user who is not in `allowed`; state: the callback's
 * state is missing or not the one its login began with (forged, or from another login's tab);
 * denied: the provider sent the browser back with an error (the user declined, the client is not
 * let in); rejected: the provider refused the code, the refresh token or the client (spent,
 * expired, revoked: the login at the provider is over, or the client's credentials are wrong);
 * invalid: an answer failed a check (ID token issuer, audience, nonce, expiry; a malformed body);
 * timeout: no answer within timeout_ms; unreachable: no connection; provider_error: an error
 * status that is not an OAuth answer (a 5xx, a 404 at a wrong issuer address).
 */
export type OidcRefusalReason =
  | "not_allowed"
  | "state"
  | "denied"
  | "rejected"
  | "invalid"
  | "timeout"
  | "unreachable"
  | "provider_error";

export interface OidcRefusal {
  ok: false;
  action: OidcAction;
  reason: OidcRefusalReason;
  /**
   * Whether the same request may well work later (timeout, unreachable, a 5xx or 429): a recheck
   * refused so should not end the dashboard's login, one refused otherwise should.
   */
  transient: boolean;
  /** What happened, for the 401 body and the audit line. */
  message: string;
  /** What to do next. */
  hint: string;
}

export function isOidcRefusal(value: object): value is OidcRefusal {
  return "ok" in value && value.ok === false;
}

/** Where the words of a refusal come from. */
export interface RefusalContext {
  action: OidcAction;
  issuer: string;
  timeout_ms: number;
}

const STEP_WORDS: Record<OidcStep, string> = {
  discovery: "its discovery document",
  code: "the exchange of the login code",
  refresh: "the refresh of the login's tokens",
  userinfo: "the userinfo request",
};

const AGAIN = "log in to the dashboard again";

export function stateRefusal(context: RefusalContext): OidcRefusal {
  return {
    ok: false,
    action: context.action,
    reason: "state",
    transient: false,
    message:
      "this login's callback does not belong to the login this browser began (its state is missing or differs): it may be forged, or come from an older login tab",
    hint: `${AGAIN}, from the dashboard's own login page`,
  };
}

export function notAllowedRefusal(
  context: RefusalContext,
  user: OidcUser,
  emailListed: boolean,
): OidcRefusal {
  const who = user.email === null ? `subject ${user.subject}` : `${user.email} (subject ${user.subject})`;
  const unverified = emailListed && !user.email_verified;
  return {
    ok: false,
    action: context.action,
    reason: "not_allowed",
    transient: false,
    message: unverified
      ? `the OIDC provider at ${context.issuer} vouched for ${who}, whose email is in the dashboard's allowed list but is not marked verified by the provider, so it does not count`
      : `the OIDC provider at ${context.issuer} vouched for ${who}, who is not in the dashboard's allowed list`,
    hint: unverified
      ? `to let them in, add their subject ${user.subject} to allowed`
      : `to let them in, add their subject ${user.subject}${user.email === null ? "" : " (or their email, if the provider marks it verified)"} to allowed`,
  };
}

/** A failure of a request to the provider, as a refusal. Never throws. */
export function providerRefusal(error: unknown, step: OidcStep, context: RefusalContext): OidcRefusal {
  const { action, issuer } = context;
  const what = STEP_WORDS[step];
  const make = (
    reason: OidcRefusalReason,
    transient: boolean,
    message: string,
    hint: string,
  ): OidcRefusal => ({
    ok: false,
    action,
    reason,
    transient,
    message,
    hint,
  });
  if (timedOut(error)) {
    return make(
      "timeout",
      true,
      `the OIDC provider at ${issuer} did not answer within ${context.timeout_ms} ms (${what})`,
      "check that the provider is up and reachable from this host; if it is only slow, raise dashboard.auth.oidc.timeout (seconds)",
    );
  }
  if (error instanceof AuthorizationResponseError) {
    return make(
      "denied",
      false,
      `the OIDC provider at ${issuer} did not log you in: ${oauthError(error.error, error.error_description)}`,
      `${AGAIN}; if the provider keeps refusing, check that the client is allowed to log users in there`,
    );
  }
  if (error instanceof ResponseBodyError && error.status < 500) {
    return make(
      "rejected",
      false,
      `the OIDC provider at ${issuer} refused ${what}: ${oauthError(error.error, error.error_description)}`,
      error.error === "invalid_client"
        ? "check the OIDC client_id and client_secret against the client registered at the provider"
        : AGAIN,
    );
  }
  if (error instanceof WWWAuthenticateChallengeError) {
    return make(
      "rejected",
      false,
      `the OIDC provider at ${issuer} refused ${what} (HTTP ${error.status})`,
      AGAIN,
    );
  }
  const status = httpStatus(error);
  if (status !== null) {
    const transient = status >= 500 || status === 429;
    return make(
      "provider_error",
      transient,
      `the OIDC provider at ${issuer} answered ${what} with HTTP ${status}`,
      transient
        ? "try again shortly; if it goes on, check the provider's status"
        : "check the OIDC issuer address: it must be the provider's issuer identifier exactly",
    );
  }
  const system = systemCode(error);
  if (system !== null) {
    return make(
      "unreachable",
      true,
      `could not connect to the OIDC provider at ${issuer} for ${what} (${system})`,
      "check the OIDC issuer address and that this host can reach it (DNS, firewall, proxy, TLS certificate)",
    );
  }
  return make(
    "invalid",
    false,
    `the OIDC provider at ${issuer} answered ${what} with something that failed a check: ${detail(error)}`,
    "check the OIDC issuer address and client_id; if they are right, the provider's answer is not one Tenax can trust",
  );
}

function oauthError(code: string, description: string | undefined): string {
  return description ? `${code} (${description})` : code;
}

/** The chain of causes of an error, the error first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let at = error; at !== undefined && at !== null && chain.length < 8; ) {
    chain.push(at);
    at = at instanceof Error ? at.cause : undefined;
  }
  return chain;
}

/** openid-client's OAUTH_TIMEOUT, or the DOMException an AbortSignal.timeout ends a fetch with. */
function timedOut(error: unknown): boolean {
  return causes(error).some(
    (e) =>
      (e instanceof ClientError && e.code === "OAUTH_TIMEOUT") ||
      (e instanceof Error && e.name === "TimeoutError"),
  );
}

/**
 * The status of an answer that was not a success (openid-client keeps the Response as the cause of
 * the error); a 200 it could not read is a malformed answer, not a status to report.
 */
function httpStatus(error: unknown): number | null {
  if (error instanceof ResponseBodyError) return error.status;
  for (const e of causes(error)) {
    if (e instanceof Response && (e.status < 200 || e.status >= 300)) return e.status;
  }
  return null;
}

/** The system error (ECONNREFUSED, ENOTFOUND, a TLS code) under a failed fetch, if there is one. */
function systemCode(error: unknown): string | null {
  if (!(error instanceof TypeError)) return null;
  for (const e of causes(error).slice(1)) {
    if (e instanceof Error && "code" in e && typeof e.code === "string") return e.code;
  }
  return null;
}

function detail(error: unknown): string {
  const chain = causes(error).filter((e): e is Error => e instanceof Error);
  // openid-client wraps oauth4webapi's error, whose message names the claim or attribute.
  return chain.length > 1 ? `${errorMessage(chain[0])}: ${errorMessage(chain[1])}` : errorMessage(error);
}
