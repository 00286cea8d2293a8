// The node:http pieces under every Tenax HTTP app (gateway, dashboard, simulator): a JSON body with
// its length on a raw response (streams and hijacked replies), and a JSON answer to a request
// Node's parser refuses before any app sees it.
import { type ServerResponse, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { HttpError } from "./http-error.js";

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

/** An HttpError on a raw response (a stream's route, a hijacked reply), in the OpenAI shape. */
export function sendError(res: ServerResponse, error: HttpError): void {
  sendJson(res, error.status, error.toJSON(), error.headers);
}

/**
 * Node's HTTP parser refuses a malformed request (an unknown method, a bad header, a body without
 * its framing) before any route sees it, and by default answers a bare 400 with no body. Answer it
 * in the same OpenAI shape instead (the server's `clientError` listener), then close the socket.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  // A response already under way on this socket cannot be followed by another (Node's own check).
  const busy = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (error.code === "ECONNRESET" || !socket.writable || busy) {
    socket.destroy();
    return;
  }
  const status =
    error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  const body = JSON.stringify({
    error: {
      message: `the request is not valid HTTP (${error.code ?? error.message}); send a well-formed HTTP/1.1 request`,
      type: "invalid_request_error",
      code: "invalid_http",
    },
  });
  // Then closed outright: the server allows half-open sockets, so a peer that never closes its
  // side (a flood of stalled request heads) would otherwise hold the descriptor forever.
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
