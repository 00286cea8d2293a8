// Small pieces every HTTP server of Tenax (gateway, dashboard) answers with: a JSON body with its
// length, and one header's value read the same way everywhere.
import type { IncomingHttpHeaders, ServerResponse } from "node:http";

/** Send `body` as JSON; after headers already went out, only end the response. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/** A request header's first value, trimmed; undefined when absent or blank. */
export function headerValue(value: IncomingHttpHeaders[string]): string | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  return v === undefined || v.trim() === "" ? undefined : v.trim();
}
