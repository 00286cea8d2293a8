// Logging in to the dashboard from the command line: `tenax dashboard link [--ttl 10m] [--port P]`
// prints a one-time login URL, `tenax dashboard logins [list|revoke ID]` shows and ends logins;
// and what `tenax dashboard` says when it starts: the login link in mode token, and a refusal to
// serve a network address without a login.
import { hostname, userInfo } from "node:os";
import type { Command } from "commander";
import { openAuditTrail } from "../../agent/audit-trail.js";
import type { LoadedConfig } from "../../config/load.js";
import { loadConfig } from "../../config/load.js";
import type { TenaxConfig } from "../../config/schema.js";
import { errorMessage, TenaxError, UsageError } from "../../core/errors.js";
import { auditLoginEvent } from "../../dashboard/auth/dashboard-auth.js";
import { LoginBook } from "../../dashboard/auth/login-book.js";
import type { Login } from "../../dashboard/auth/login-outcomes.js";
import { DEFAULT_LINK_TTL_MS, MAX_LINK_TTL_MS } from "../../dashboard/auth/login-settings.js";
import type { Dashboard } from "../../dashboard/server.js";
import { isLoopback, isWildcard } from "../../http/host-header.js";
import { parsePort, urlHost } from "../../http/listen.js";
import { readDashboardPid, readDashboardPidInfo } from "../../profile/dashboard-pid.js";
import type { ProfilePaths } from "../../profile/paths.js";
import type { StorePort } from "../../store/port.js";
import type { Cli } from "../main.js";
import { formatTime, type Output, table } from "../output.js";
import { withWriter } from "../store-access.js";

/** The address a link is made on: public_url behind a proxy, else where the dashboard listens. */
export function dashboardBase(config: TenaxConfig, host: string, port: number): string {
  const { public_url } = config.dashboard;
  if (public_url !== undefined) return public_url.replace(/\/+$/, "");
  return `http://${urlHost(isWildcard(host) ? "127.0.0.1" : host)}:${port}`;
}

/**
 * Anywhere but loopback the dashboard needs a login, and a login sent in the clear can be read on
 * the way: mode none is refused there, and plain HTTP is warned of.
 */
export function checkExposure(
  host: string,
  config: TenaxConfig,
  flags: { host?: string },
  loaded: LoadedConfig | null,
  out: Output,
): void {
  if (isLoopback(host)) return;
  const { mode } = config.dashboard.auth;
  if (mode === "none") {
    const why = `refusing to serve the dashboard on ${host} with dashboard.auth.mode none: anyone who reaches the port would read every transcript of the profile`;
    const hint =
      "leave dashboard.auth.mode at token (the default) and log in with tenax dashboard link, or serve on 127.0.0.1";
    if (flags.host === undefined && loaded !== null) throw loaded.problemAt(["dashboard", "host"], why, hint);
    throw new TenaxError("dashboard_unprotected", why, { hint, exitCode: 2 });
  }
  if (config.dashboard.public_url?.startsWith("https:") !== true)
    out.warn(
      `the dashboard serves on ${host} over plain HTTP: a login link or cookie sent across a network can be read on the way. Put it behind a reverse proxy with TLS and set dashboard.public_url (docs/SECURITY.md)`,
    );
}

/** The first line a starting dashboard prints about logging in. */
export async function announceLogin(dashboard: Dashboard, out: Output, base: string): Promise<void> {
  const { auth } = dashboard.config.dashboard;
  if (auth.mode === "none") {
    out.line(`dashboard: no login (dashboard.auth.mode none): open ${base}/`);
    return;
  }
  if (auth.mode === "oidc") {
    out.line(`dashboard: log in at ${base}/auth/login with ${auth.oidc?.issuer ?? "the identity provider"}`);
    return;
  }
  try {
    const link = await (await dashboard.auth.logins()).createLink({ madeBy: "tenax dashboard (at start)" });
    out.line(
      `dashboard: log in at ${base}${link.url_path} (works once, until ${formatTime(link.expires_at)} UTC; another: tenax dashboard link)`,
    );
  } catch (error) {
    out.warn(
      `dashboard: no login link could be made (${errorMessage(error)}); open ${base}/ and follow what it says`,
    );
  }
}

export function registerDashboardLogins(dashboard: Command, cli: Cli): void {
  dashboard
    .command("link")
    .description("print a one-time login URL for the dashboard (auth mode token)")
    .option("--ttl <duration>", "how long the link may be used: 30s, 10m, 2h, 1d (default 10m)")
    .option("--port <port>", "the dashboard's port in the URL (default: where it runs, else dashboard.port)")
    .option("--json", "print one JSON document")
    .action((flags: { ttl?: string; port?: string; json?: boolean }) =>
      cli.run(flags.json, (out) => printLink(cli.profile(), out, flags)),
    );
  const logins = dashboard.command("logins").description("list the dashboard's logins, or end one");
  logins
    .command("list", { isDefault: true })
    .description("the logins that are not revoked or expired")
    .option("--json", "print one JSON document")
    .action((flags: { json?: boolean }) => cli.run(flags.json, (out) => listLogins(cli.profile(), out)));
  logins
    .command("revoke <id>")
    .description("end a login and every token of it, at once")
    .option("--json", "print one JSON document")
    .action((id: string, flags: { json?: boolean }) =>
      cli.run(flags.json, (out) => revokeLogin(cli.profile(), out, id)),
    );
}

async function printLink(
  paths: ProfilePaths,
  out: Output,
  flags: { ttl?: string; port?: string },
): Promise<number> {
  const ttlMs = flags.ttl === undefined ? DEFAULT_LINK_TTL_MS : parseTtl(flags.ttl);
  const flagPort = flags.port === undefined ? undefined : parsePort(flags.port, "--port");
  const { config } = loadConfig(paths);
  const { mode } = config.dashboard.auth;
  if (mode !== "token")
    throw new UsageError(
      `login links are for dashboard.auth.mode token, and this profile's mode is ${mode}`,
      {
        hint:
          mode === "none"
            ? "the dashboard has no login: open it directly, or set dashboard.auth.mode token"
            : "log in at the dashboard's /auth/login with your identity provider",
      },
    );
  const running = readDashboardPid(paths).running ? readDashboardPidInfo(paths) : null;
  const host = running?.host ?? config.dashboard.host;
  const port = flagPort ?? running?.port ?? config.dashboard.port;
  const base = dashboardBase(config, host, port);
  const madeBy = `tenax dashboard link (${userInfo().username}@${hostname()})`;
  const link = await withWriter(paths, (store) =>
    bookFor(paths, config, store).createLink({ ttlMs, madeBy }),
  );
  const url = `${base}${link.url_path}`;
  if (out.json) {
    out.document({
      url,
      link_id: link.link_id,
      expires_at: link.expires_at,
      dashboard_running: running !== null,
    });
    return 0;
  }
  out.line(url);
  out.line(`works once, until ${formatTime(link.expires_at)} UTC; open it on the device to log in`);
  if (running === null && flagPort === undefined && config.dashboard.public_url === undefined)
    out.warn(
      `no dashboard runs for profile '${paths.name}' now: start it with tenax dashboard (or tenax up)`,
    );
  return 0;
}

/** `--ttl`: 30s, 10m, 2h, 1d; at most 7 days. */
export function parseTtl(text: string): number {
  const match = /^(\d{1,6})([smhd])$/.exec(text.trim());
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match?.[2] as "s"];
  const ms = match ? Number(match[1]) * unit : Number.NaN;
  if (!(ms > 0 && ms <= MAX_LINK_TTL_MS))
    throw new UsageError(`--ttl: ${JSON.stringify(text)} is not a duration from 1s to 7d`, {
      hint: "for example --ttl 10m (or 30s, 2h, 1d)",
    });
  return ms;
}

/** The profile's login book, whose changes (a link made, a login revoked) go to the audit trail. */
function bookFor(paths: ProfilePaths, config: TenaxConfig, store: StorePort): LoginBook {
  const audit = openAuditTrail(paths, config.logs, { source: "dashboard" });
  return new LoginBook({ store, onEvent: (event) => auditLoginEvent(audit, event) });
}

async function listLogins(paths: ProfilePaths, out: Output): Promise<number> {
  const logins = await withWriter(paths, (store) => new LoginBook({ store }).list());
  if (out.json) {
    out.document({ logins });
    return 0;
  }
  if (logins.length === 0) {
    out.line("no logins: tenax dashboard link makes a login link");
    return 0;
  }
  out.line(table(["ID", "STARTED", "LAST USED", "ENDS", "CLIENT"], logins.map(row)));
  return 0;
}

function row(login: Login): string[] {
  return [
    login.login_id,
    formatTime(login.created_at),
    formatTime(login.last_used_at),
    formatTime(login.expires_at),
    (login.client ?? "?").slice(0, 60),
  ];
}

async function revokeLogin(paths: ProfilePaths, out: Output, id: string): Promise<number> {
  const { config } = loadConfig(paths);
  const revoked = await withWriter(paths, (store) => bookFor(paths, config, store).revoke(id));
  if (!revoked)
    throw new TenaxError(
      "login_not_found",
      `no live login ${id}: it is unknown, expired or already revoked`,
      {
        hint: "tenax dashboard logins lists the live ones",
        exitCode: 1,
      },
    );
  if (out.json) out.document({ revoked: id });
  else out.line(`login ${id} revoked: its tokens no longer work, in every process that serves the dashboard`);
  return 0;
}
