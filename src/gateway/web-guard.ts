// What keeps a web page the user happens to visit from using the local gateway: every request is
// checked here before any route sees it. A `Host` the gateway is not reached by (DNS rebinding)
// is a 421; an `Origin` that is not the gateway's own and not in gateway.cors_origins is a 403
// (`Origin: null`, from a sandboxed frame or a file, is foreign too); a listed origin gets CORS
// headers and its preflight is answered. Requests without an Origin (curl, SDKs) pass: browsers
// always send one on the requests that could change anything.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type HostPolicy, hostAllowed } from "../http/host-header.js";
import { HttpError, headerValue } from "../http/http-error.js";

/** What a listed origin may send (the preflight's answer). */
export const CORS_ALLOW_HEADERS = "Authorization, Content-Type, X-Session-Id, Idempotency-Key, Last-Event-ID";
export const CORS_ALLOW_METHODS = "GET, POST, DELETE, OPTIONS";
/** What a listed origin's page may read of an answer, beyond the basic headers. */
export const CORS_EXPOSE_HEADERS = "X-Session-Id, Location, Retry-After";

export interface WebGuardPolicy {
  hosts: HostPolicy;
  /** gateway.cors_origins: serialized origins (scheme://host[:port]), already validated. */
  corsOrigins: readonly string[];
}

/**
 * Check one request's Host and Origin; throws the 421 or 403. Returns "answered" when it was a
 * preflight of a listed origin (answered 204 here), else "continue", with the CORS headers of a
 * listed origin already set on `res`.
 */
export function guardRequest(
  req: IncomingMessage,
  res: ServerResponse,
  policy: WebGuardPolicy,
): "answered" | "continue" {
  const host = req.headers.host;
  if (!hostAllowed(host, policy.hosts)) throw misdirected(host, policy.hosts);
  const origin = headerValue(req.headers.origin);
  if (origin === undefined || origin === ownOrigin(host)) return "continue";
  if (!policy.corsOrigins.includes(origin)) throw foreignOrigin(origin);
  res.setHeader("access-control-allow-origin", origin);
  res.setHeader("access-control-expose-headers", CORS_EXPOSE_HEADERS);
  res.setHeader("vary", "Origin");
  if (req.method !== "OPTIONS") return "continue";
  res.writeHead(204, {
    "access-control-allow-methods": CORS_ALLOW_METHODS,
    "access-control-allow-headers": CORS_ALLOW_HEADERS,
    "access-control-max-age": "600",
    "content-length": "0",
  });
  res.end();
  return "answered";
}

/** The origin a page served by this gateway itself would have: http:// and the Host it was sent to. */
function ownOrigin(host: string | undefined): string | null {
  try {
    return new URL(`http://${host}`).origin;
  } catch {
    return null;
  }
}

function misdirected(host: string | undefined, hosts: HostPolicy): HttpError {
  const port = hosts.port ?? "PORT";
  return new HttpError(
    421,
    "invalid_request_error",
    "misdirected_request",
    `this gateway answers only requests addressed to a loopback name (127.0.0.1:${port}, localhost:${port}) or its configured host, not Host ${JSON.stringify(host ?? "")}: a web page can point its own name at this machine (DNS rebinding), so other names are refused. Call it as http://127.0.0.1:${port}, or add the name clients use to gateway.allowed_hosts`,
  );
}

function foreignOrigin(origin: string): HttpError {
  return new HttpError(
    403,
    "permission_error",
    "origin_not_allowed",
    `requests from the web origin ${JSON.stringify(origin)} are refused: a page the user visits must not drive the agent. To let a web app call this gateway, add its origin to gateway.cors_origins (for example "https://app.example.com")`,
  );
}
