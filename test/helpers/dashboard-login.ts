// Logging in to a dashboard as its user does: the one-time link a starting dashboard prints (or
// `tenax dashboard link` prints) is opened once, and its two cookies are the login. Tests about
// the dashboard's views use the login's access token as `Authorization: Bearer`; page tests give
// the cookies to Chromium.
import type { Page } from "playwright-core";
import type { Dashboard } from "../../src/dashboard/server.js";

export interface DashboardLogin {
  /** The link it was started from (used up). */
  link: string;
  access: string;
  refresh: string;
  /** A Cookie header with both cookies. */
  cookie: string;
  /** `Authorization: Bearer ACCESS`. */
  headers: Record<string, string>;
}

/** The login link in a dashboard's (or tenax up's) output, or null. */
export function loginLinkIn(output: string): string | null {
  return /dashboard: log in at (http\S+\/auth\/link\?token=\S+)/.exec(output)?.[1] ?? null;
}

/** Open a one-time link as a browser would (without following the redirect); its cookies are the login. */
export async function redeemLink(link: string): Promise<DashboardLogin> {
  const res = await fetch(link, { redirect: "manual" });
  if (res.status !== 303) throw new Error(`the login link answered ${res.status}: ${await res.text()}`);
  return loginOfCookies(link, res.headers.getSetCookie());
}

export function loginOfCookies(link: string, setCookies: string[]): DashboardLogin {
  const value = (name: string) => {
    const found = setCookies.map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1]).find(Boolean);
    if (found === undefined) throw new Error(`no ${name} cookie in ${JSON.stringify(setCookies)}`);
    return found;
  };
  const access = value("tenax_session");
  const refresh = value("tenax_refresh");
  return {
    link,
    access,
    refresh,
    cookie: `tenax_session=${access}; tenax_refresh=${refresh}`,
    headers: { authorization: `Bearer ${access}` },
  };
}

/** Log in to a dashboard served in-process (buildDashboardApp), through its own login book. */
export async function inProcessLogin(dashboard: Dashboard): Promise<DashboardLogin> {
  const book = await dashboard.auth.logins();
  const link = await book.createLink({ madeBy: "test" });
  const redeemed = await book.redeemLink(link.token);
  if (!redeemed.ok) throw new Error(`the test's own link was refused: ${redeemed.message}`);
  return {
    link: link.url_path,
    access: redeemed.access_token,
    refresh: redeemed.refresh_token,
    cookie: `tenax_session=${redeemed.access_token}; tenax_refresh=${redeemed.refresh_token}`,
    headers: { authorization: `Bearer ${redeemed.access_token}` },
  };
}

/** Give Chromium the login's cookies for the dashboard at `url` (then page.goto(url) shows the page). */
export async function logInBrowser(page: Page, url: string, login: DashboardLogin): Promise<void> {
  await page.context().addCookies([
    { name: "tenax_session", value: login.access, url, httpOnly: true, sameSite: "Lax" },
    { name: "tenax_refresh", value: login.refresh, url, httpOnly: true, sameSite: "Lax" },
  ]);
}
