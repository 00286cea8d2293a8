// The login's two cookies: `tenax_session` (the short-lived access token) and `tenax_refresh` (the
// rotating refresh token). Both are HttpOnly (the page's scripts never see them), SameSite=Lax (a
// foreign site's form or fetch does not carry them), on path / (a page load with an expired access
// cookie must carry the refresh one to be renewed transparently), and Secure whenever the page is
// reached over TLS (a public_url of https, or a reverse proxy on loopback saying
// X-Forwarded-Proto: https), so a TLS login is never sent in the clear.
import { parseCookie, stringifySetCookie } from "cookie";
import type { LoginTokens } from "./login-outcomes.js";

export const SESSION_COOKIE = "tenax_session";
export const REFRESH_COOKIE = "tenax_refresh";
/** An OIDC login under way: its state, nonce and PKCE verifier, until the provider sends the browser back. */
export const OIDC_COOKIE = "tenax_oidc";
const OIDC_PATH = "/auth/oidc";
/** A login at the provider may take this long (seconds). */
const OIDC_MAX_AGE = 600;

export interface PresentedCookies {
  session: string | null;
  refresh: string | null;
}

export function readLoginCookies(header: string | undefined): PresentedCookies {
  if (header === undefined || header === "") return { session: null, refresh: null };
  const cookies = parseCookie(header);
  return { session: cookies[SESSION_COOKIE] ?? null, refresh: cookies[REFRESH_COOKIE] ?? null };
}

/** The Set-Cookie values of a login's tokens; each cookie lives as long as its token. */
export function loginCookies(tokens: LoginTokens, now: number, secure: boolean): string[] {
  const seconds = (at: number) => Math.max(1, Math.floor((at - now) / 1000));
  return [
    cookie(SESSION_COOKIE, tokens.access_token, seconds(tokens.access_expires_at), secure),
    cookie(REFRESH_COOKIE, tokens.refresh_token, seconds(tokens.refresh_expires_at), secure),
  ];
}

/** The Set-Cookie values that drop both cookies (a login that ended, a logout). */
export function clearedCookies(secure: boolean): string[] {
  return [cookie(SESSION_COOKIE, "", 0, secure), cookie(REFRESH_COOKIE, "", 0, secure)];
}

/** The cookie of an OIDC login under way (sent back only to /auth/oidc/*), or its removal (value null). */
export function oidcCookie(value: string | null, secure: boolean): string {
  return cookie(OIDC_COOKIE, value ?? "", value === null ? 0 : OIDC_MAX_AGE, secure, OIDC_PATH);
}

export function readOidcCookie(header: string | undefined): string | null {
  if (header === undefined || header === "") return null;
  return parseCookie(header)[OIDC_COOKIE] ?? null;
}

function cookie(name: string, value: string, maxAge: number, secure: boolean, path = "/"): string {
  // SameSite=Lax: sent on the provider's top-level redirect back, never on a foreign site's fetch.
  return stringifySetCookie({ name, value, maxAge, path, httpOnly: true, sameSite: "lax", secure });
}
