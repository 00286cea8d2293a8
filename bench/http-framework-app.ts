// The framework bench's one route, served three ways: plain node:http as the gateway serves today
// (a hand-written router, readJsonBody, a zod-checked body, sendJson), Fastify 5 (its own JSON
// body parser, the same zod check, reply.send) and Hono 4 on @hono/node-server (c.req.json(), the
// same zod check, c.json). POST /v1/chat/completions answers a chat completion of about 1 KB, or
// with `stream: true` 20 small SSE chunks and [DONE], each written after a turn of the event loop
// so that each is a write of its own. The route's own work is the same in all three; what differs
// is the framework around it.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import Fastify, { type FastifyInstance } from "fastify";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import { readJsonBody } from "../src/http/json-body.js";
import { sendJson } from "../src/http/node-http.js";

export const FRAMEWORKS = ["node", "fastify", "hono"] as const;
export type Framework = (typeof FRAMEWORKS)[number];

export const ROUTE = "/v1/chat/completions";
export const STREAM_CHUNKS = 20;

const ChatBody = z.object({
  model: z.string().min(1),
  messages: z
    .array(
      z.object({
        role: z.enum(["system", "user", "assistant", "tool"]),
        content: z.string(),
      }),
    )
    .min(1),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(2).optional(),
  max_tokens: z.number().int().positive().optional(),
});
type ChatBody = z.infer<typeof ChatBody>;

const REPLY_TEXT = "Resilient agents keep their state in a durable store, retry what can be retried, ".repeat(
  9,
);

/** The non-streamed answer: a chat completion of about 1 KB. */
function completion(body: ChatBody): unknown {
  return {
    id: "chatcmpl-bench",
    object: "chat.completion",
    created: 1_764_633_600,
    model: body.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content: REPLY_TEXT },
        finish_reason: "stop",
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 12, completion_tokens: 180, total_tokens: 192 },
  };
}

/** The streamed answer's events, as the `data:` payloads of an SSE stream (the last one is [DONE]). */
function chunks(body: ChatBody): string[] {
  const piece = (i: number) => REPLY_TEXT.slice(i * 20, i * 20 + 20);
  const chunk = (delta: Record<string, string>, finish: string | null) =>
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion.chunk",
      created: 1_764_633_600,
      model: body.model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
  return [
    ...Array.from({ length: STREAM_CHUNKS }, (_, i) =>
      chunk(i === 0 ? { role: "assistant", content: piece(i) } : { content: piece(i) }, null),
    ),
    chunk({}, "stop"),
    "[DONE]",
  ];
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

const invalid = (issues: readonly { path: readonly PropertyKey[]; message: string }[]) => ({
  error: {
    message: issues.map((i) => `${i.path.map(String).join(".") || "body"}: ${i.message}`).join("; "),
    type: "invalid_request_error",
    code: "invalid_body",
  },
});

const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/** Writes the streamed answer to a Node response (the node:http and Fastify variants). */
async function writeSse(res: ServerResponse, body: ChatBody): Promise<void> {
  res.writeHead(200, SSE_HEADERS);
  for (const data of chunks(body)) {
    res.write(`data: ${data}\n\n`);
    await tick();
  }
  res.end();
}

/** Today's style: a hand-written router over node:http. */
async function nodeHandler(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? "/").split("?")[0];
  if (path !== ROUTE) {
    sendJson(res, 404, { error: { message: "no such route", type: "not_found" } });
    return;
  }
  if (req.method !== "POST") {
    sendJson(res, 405, { error: { message: "POST only", type: "invalid" } });
    return;
  }
  try {
    const parsed = ChatBody.safeParse(await readJsonBody(req, req.headers["content-type"]));
    if (!parsed.success) sendJson(res, 400, invalid(parsed.error.issues));
    else if (parsed.data.stream === true) await writeSse(res, parsed.data);
    else sendJson(res, 200, completion(parsed.data));
  } catch (error) {
    sendJson(res, 400, { error: { message: String(error), type: "invalid_request_error" } });
  }
}

export function buildFastify(): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 4 * 1024 * 1024 });
  app.post(ROUTE, async (request, reply) => {
    const parsed = ChatBody.safeParse(request.body);
    if (!parsed.success) return reply.code(400).send(invalid(parsed.error.issues));
    if (parsed.data.stream === true) {
      reply.hijack();
      await writeSse(reply.raw, parsed.data);
      return reply;
    }
    return reply.send(completion(parsed.data));
  });
  return app;
}

export function buildHono(): Hono {
  const app = new Hono();
  app.post(ROUTE, async (c) => {
    let raw: unknown;
    try {
      raw = await c.req.json();
    } catch (error) {
      return c.json({ error: { message: String(error), type: "invalid_request_error" } }, 400);
    }
    const parsed = ChatBody.safeParse(raw);
    if (!parsed.success) return c.json(invalid(parsed.error.issues), 400);
    const body = parsed.data;
    if (body.stream === true) {
      return streamSSE(c, async (stream) => {
        for (const data of chunks(body)) {
          await stream.writeSSE({ data });
          await tick();
        }
      });
    }
    return c.json(completion(body));
  });
  return app;
}

/** Serves one variant on 127.0.0.1, port 0; resolves with its origin and a close function. */
export async function serveFramework(
  kind: Framework,
): Promise<{ origin: string; close: () => Promise<void> }> {
  const origin = (a: AddressInfo | string | null) => {
    if (a === null || typeof a === "string") throw new Error(`the ${kind} server has no TCP address`);
    return `http://127.0.0.1:${a.port}`;
  };
  switch (kind) {
    case "node": {
      const server = createServer((req, res) => {
        void nodeHandler(req, res);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      return { origin: origin(server.address()), close: () => new Promise((r) => server.close(() => r())) };
    }
    case "fastify": {
      const app = buildFastify();
      await app.listen({ host: "127.0.0.1", port: 0 });
      return { origin: origin(app.server.address()), close: () => app.close() };
    }
    case "hono": {
      const app = buildHono();
      let server: ReturnType<typeof serve> | undefined;
      const info = await new Promise<AddressInfo>((resolve) => {
        server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: 0 }, resolve);
      });
      return {
        origin: origin(info),
        close: () => new Promise((r) => (server ? server.close(() => r()) : r())),
      };
    }
    default: {
      const never: never = kind;
      throw new Error(`unknown framework ${String(never)}`);
    }
  }
}
