// One request with any method and any headers, read whole: for what fetch will not send (a method
// Node's server parser refuses, a Host header of another name, an Origin as a browser sends it).
import { type IncomingHttpHeaders, request } from "node:http";

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export function rawRequest(
  base: string,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  const url = new URL(base);
  const body = options.body;
  const headers = {
    ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
    ...options.headers,
  };
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}
