// The Responses API routes: POST /v1/responses (create-response.ts), GET and DELETE
// /v1/responses/ID. Bodies are read by the gateway's own rules (body.ts: JSON only, size and depth
// bounds) and every error leaves in the OpenAI shape. Auth, Host and Origin checks are the app's,
// as for every route.
import type { FastifyError, FastifyInstance } from "fastify";
import { MAX_BODY_BYTES, readJsonBody } from "../body.js";
import { GatewayError, toGatewayError } from "../http-error.js";
import { responseNotFound } from "./chain.js";
import { InnerCalls } from "./chat-call.js";
import { createResponse, type ResponsesDeps } from "./create-response.js";
import type { OutputItem } from "./response-object.js";

export type { ResponsesDeps } from "./create-response.js";

export interface ResponsesRouteOptions extends ResponsesDeps {
  bodyLimit?: number;
}

export function registerResponsesRoutes(app: FastifyInstance, deps: ResponsesRouteOptions): void {
  const calls = new InnerCalls();
  calls.hook(app);
  app.register(async (scope) => {
    const limit = deps.bodyLimit ?? MAX_BODY_BYTES;
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { bodyLimit: limit * 16 }, (request, payload, done) => {
      // GET and DELETE take no body: whatever was sent is read and dropped.
      if (request.method !== "POST") {
        payload.resume();
        payload.once("end", () => done(null, undefined));
        return;
      }
      readJsonBody(request.raw, limit).then(
        (body) => done(null, body),
        (error: Error) => done(error),
      );
    });
    scope.setErrorHandler((error, _request, reply) => {
      const e = asGatewayError(error);
      reply.code(e.status).headers(e.headers).send(e.toJSON());
    });

    scope.post("/v1/responses", (request, reply) => createResponse(app, calls, deps, request, reply));

    scope.get<{ Params: { id: string } }>("/v1/responses/:id", async (request, reply) => {
      const found = deps.store.getResponse(request.params.id);
      if (found === null) throw responseNotFound(request.params.id, "", null);
      const output = found.output as OutputItem[];
      const text = output
        .flatMap((item) => (item.type === "message" ? item.content.map((p) => p.text) : []))
        .join("");
      const headers = found.session_id ? { "x-session-id": found.session_id } : {};
      reply.headers(headers).send({ ...found.response, output, output_text: text });
    });

    scope.delete<{ Params: { id: string } }>("/v1/responses/:id", async (request, reply) => {
      if (!(await deps.store.deleteResponse(request.params.id)))
        throw responseNotFound(request.params.id, "", null);
      reply.send({ id: request.params.id, object: "response", deleted: true });
    });
  });
}

/** Fastify's own errors (a 4xx with an FST_ code) keep their status; the rest as the gateway maps them. */
function asGatewayError(error: unknown): GatewayError {
  const fst = error as Partial<FastifyError>;
  if (!(error instanceof GatewayError) && typeof fst.statusCode === "number" && fst.statusCode < 500)
    return new GatewayError(
      fst.statusCode,
      "invalid_request_error",
      (fst.code ?? "invalid_request").toLowerCase(),
      fst.message ?? "the request was refused",
    );
  return toGatewayError(error);
}
