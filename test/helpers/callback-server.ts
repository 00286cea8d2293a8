// A real HTTP server on 127.0.0.1 that stands for an automation tool's callback URL: it records
// every POST the webhook platform makes (headers and JSON body) and answers each with the next
// scripted status (200 once the script is used up). Closed after each test that starts one.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach } from "vitest";

export interface CallbackPost {
  headers: IncomingHttpHeaders;
  body: CallbackBody;
  /** The status this post was answered with. */
  status: number;
}

/** What the webhook adapter posts (src/platforms/webhook/adapter.ts). */
export interface CallbackBody {
  type: "send" | "edit";
  message_id: string;
  chat_id: string;
  thread_id: string | null;
  text: string;
  format: string;
  buttons: { text: string; data: string }[][];
}

export interface CallbackServer {
  url: string;
  posts(): CallbackPost[];
  /** The posts answered 2xx: what the tool took. */
  taken(): CallbackPost[];
  /** The statuses the next posts are answered with, in order. */
  answer(statuses: number[]): void;
  close(): Promise<void>;
}

const open: CallbackServer[] = [];
afterEach(async () => {
  for (const server of open.splice(0)) await server.close();
});

export async function startCallbackServer(): Promise<CallbackServer> {
  const posts: CallbackPost[] = [];
  const script: number[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => {
      const status = script.shift() ?? 200;
      let body: CallbackBody;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as CallbackBody;
      } catch {
        body = { text: Buffer.concat(chunks).toString("utf8") } as CallbackBody;
      }
      posts.push({ headers: request.headers, body, status });
      response.writeHead(status, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const handle: CallbackServer = {
    url: `http://127.0.0.1:${port}/tenax/callback`,
    posts: () => [...posts],
    taken: () => posts.filter((p) => p.status >= 200 && p.status < 300),
    answer: (statuses) => script.push(...statuses),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  open.push(handle);
  return handle;
}
