// The chat route called in-process: POST /v1/chat/completions through the app's own inject(), with
// the caller's key and Host, its answer read as a stream. The caller's hang-up is passed on: the
// chat route's response is destroyed, as a client's hang-up would close it. That response is
// found by an onRequest hook through a header naming the call (an inject's own abort signal stops
// acting once the body has been read).
import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";

/** The header that names an in-process call, so its response can be found to hang up on. */
const CALL_HEADER = "x-tenax-inner-call";

/** The chat calls in flight, by the id their header carries. */
export class InnerCalls {
  private readonly calls = new Map<string, { res: ServerResponse | null; aborted: boolean }>();

  /** Watch the app's requests for the calls made here (once, before the app is ready). */
  hook(app: FastifyInstance): void {
    app.addHook("onRequest", async (request, reply) => {
      const id = request.headers[CALL_HEADER];
      const call = typeof id === "string" ? this.calls.get(id) : undefined;
      if (call === undefined) return;
      call.res = reply.raw;
      if (call.aborted) reply.raw.destroy();
    });
  }

  open(): { id: string; abort(): void; close(): void } {
    const id = randomUUID();
    const call = { res: null as ServerResponse | null, aborted: false };
    this.calls.set(id, call);
    return {
      id,
      abort: () => {
        call.aborted = true;
        call.res?.destroy();
      },
      close: () => this.calls.delete(id),
    };
  }
}

export interface ChatCallAnswer {
  status: number;
  headers: Record<string, string>;
  /** The answer's bytes; a JSON body or an event stream, per `eventStream`. */
  body: Readable;
  eventStream: boolean;
}

export interface ChatCall {
  answer: Promise<ChatCallAnswer>;
  /** Hang up on the chat route (the caller went away). */
  abort(): void;
}

export function callChat(
  app: FastifyInstance,
  calls: InnerCalls,
  caller: IncomingHttpHeaders,
  body: Record<string, unknown>,
  sessionId: string | null,
): ChatCall {
  const inner = calls.open();
  const headers: Record<string, string> = { "content-type": "application/json", [CALL_HEADER]: inner.id };
  for (const name of ["authorization", "host"] as const) {
    const value = caller[name];
    if (typeof value === "string") headers[name] = value;
  }
  if (sessionId !== null) headers["x-session-id"] = sessionId;
  const answer = app
    .inject({
      method: "POST",
      url: "/v1/chat/completions",
      headers,
      payload: JSON.stringify(body),
      payloadAsStream: true,
    })
    .then((res): ChatCallAnswer => {
      const flat: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers))
        if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : String(value);
      res.stream().once("close", inner.close);
      return {
        status: res.statusCode,
        headers: flat,
        body: res.stream(),
        eventStream: /^text\/event-stream/i.test(flat["content-type"] ?? ""),
      };
    });
  answer.catch(inner.close);
  return { answer, abort: inner.abort };
}

/** A whole answer body as text. */
export async function readAll(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return Buffer.concat(chunks).toString("utf8");
}
