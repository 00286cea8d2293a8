// The Responses API routes: POST /v1/responses (create-response.ts), GET and DELETE
// /v1/responses/ID, GET /v1/responses/ID/input_items (input-items.ts). Bodies, errors (the OpenAI shape), auth, Host and Origin checks are the app's,
// as for every route.
import type { FastifyInstance } from "fastify";
import { responseNotFound } from "./chain.js";
import { InnerCalls } from "./chat-call.js";
import { createResponse, type ResponsesDeps } from "./create-response.js";
import { listInputItems } from "./input-items.js";
import type { OutputItem } from "./response-object.js";

export type { ResponsesDeps } from "./create-response.js";

export function registerResponsesRoutes(app: FastifyInstance, deps: ResponsesDeps): void {
  const calls = new InnerCalls();
  calls.hook(app);
  app.post("/v1/responses", { config: { jsonBody: true } }, (request, reply) =>
    createResponse(app, calls, deps, request, reply),
  );

  app.get<{ Params: { id: string } }>("/v1/responses/:id", async (request, reply) => {
    const found = await deps.store.getResponse(request.params.id);
    if (found === null) throw responseNotFound(request.params.id, "", null);
    const output = found.output as OutputItem[];
    const text = output
      .flatMap((item) => (item.type === "message" ? item.content.map((p) => p.text) : []))
      .join("");
    const headers = found.session_id ? { "x-session-id": found.session_id } : {};
    reply.headers(headers).send({ ...found.response, output, output_text: text });
  });

  app.get<{ Params: { id: string } }>("/v1/responses/:id/input_items", async (request, reply) => {
    const list = await listInputItems(deps.store, request.params.id, request.query);
    const sessionId = (await deps.store.getResponse(request.params.id))?.session_id;
    reply.headers(sessionId ? { "x-session-id": sessionId } : {}).send(list);
  });

  app.delete<{ Params: { id: string } }>("/v1/responses/:id", async (request, reply) => {
    if (!(await deps.store.deleteResponse(request.params.id)))
      throw responseNotFound(request.params.id, "", null);
    reply.send({ id: request.params.id, object: "response", deleted: true });
  });
}
