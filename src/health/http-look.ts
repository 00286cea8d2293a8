// One GET to a local Tenax server that always ends in a verdict, for the looks that must (tenax
// status, the dashboard's probe of its gateway). It uses node:http, not fetch: on Node 20, fetch
// loses a connection the server closes before answering (what a server out of file descriptors
// does to each connection it cannot accept) and leaves its promise pending, and the timer behind
// AbortSignal.timeout does not keep a process alive, so `tenax status` ended with exit 13 and no
// output. Here a socket error is named, and the deadline is a timer that holds the process open
// until it has fired.
import { request } from "node:http";

/** Why nothing came back: nothing listens, the connection was closed unanswered, no answer in time. */
export type NoAnswer = "refused" | "closed" | "timeout" | "failed";

export type Look =
  | { kind: "answer"; status: number; body: unknown }
  | { kind: "no_answer"; why: NoAnswer; message: string };

export interface LookOptions {
  headers?: Record<string, string>;
  timeoutMs: number;
  /** A body longer than this is not read (the look fails): a /health is a few kilobytes. */
  maxBytes?: number;
}

export type LookFn = (url: string, options: LookOptions) => Promise<Look>;

const MAX_BYTES = 4 * 1024 * 1024;

/** GET `url`; never rejects. A JSON body is parsed; anything else is its text. */
export const httpLook: LookFn = (url, options) =>
  new Promise<Look>((resolve) => {
    let settled = false;
    const finish = (look: Look) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      req.destroy();
      resolve(look);
    };
    // Not unref'd on purpose: the process must live to say that nothing answered.
    const deadline = setTimeout(
      () =>
        finish({
          kind: "no_answer",
          why: "timeout",
          message: `no answer within ${options.timeoutMs} ms`,
        }),
      options.timeoutMs,
    );
    const limit = options.maxBytes ?? MAX_BYTES;
    // agent: false: one connection per look, closed after it; nothing pooled outlives the look.
    const req = request(url, { method: "GET", headers: options.headers ?? {}, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit)
          return finish({ kind: "no_answer", why: "failed", message: `answered more than ${limit} bytes` });
        chunks.push(chunk);
      });
      res.on("end", () =>
        finish({
          kind: "answer",
          status: res.statusCode ?? 0,
          body: parsed(Buffer.concat(chunks).toString()),
        }),
      );
      res.on("error", (error) => finish(failure(error)));
    });
    req.on("error", (error) => finish(failure(error)));
    req.end();
  });

function parsed(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A socket error in plain words; the code says whose resource it was. */
function failure(error: Error & { code?: string }): Look {
  const code = error.code ?? "";
  if (code === "ECONNREFUSED")
    return { kind: "no_answer", why: "refused", message: "connection refused: nothing listens there" };
  if (code === "ECONNRESET" || code === "EPIPE" || error.message === "socket hang up")
    return {
      kind: "no_answer",
      why: "closed",
      message: `the connection was closed before any answer (${code || "socket hang up"}): a server out of file descriptors closes what it cannot accept`,
    };
  if (code === "EMFILE" || code === "ENFILE")
    return {
      kind: "no_answer",
      why: "failed",
      message: `this process could not open a connection (${code}: out of file descriptors)`,
    };
  return { kind: "no_answer", why: "failed", message: code ? `${code}: ${error.message}` : error.message };
}
