// POST /v1/chat/completions, dispatched on `model`: `tenax` (or no model) is a whole agent turn
// (chat-route.ts); `PROVIDER/NAME` of a configured model is one resilient model call with the
// client's own tools (deps.modelCall, model-call.ts); any other id is a 404 that
// lists the valid ones, unless gateway.default_model says where unknown ids go. Both answers
// write to the raw response (the reply is hijacked), so streams and hang-ups are theirs.
import type { App } from "../../http/app.js";
import { jsonBodyOf, toHttpError } from "../../http/app.js";
import { headerValue } from "../../http/http-error.js";
import { sendJson } from "../../http/node-http.js";
import type { GatewayRouteDeps } from "../app.js";
import { serveChat } from "../chat-route.js";
import { storeUnavailable, unavailable } from "../gateway-errors.js";
import type { ModelCatalog } from "../model-catalog.js";
import { modelNotFound } from "./models.js";

export function registerChatRoutes(app: App, deps: GatewayRouteDeps, catalog: ModelCatalog): void {
  const { gateway } = deps;
  const mapped = (error: unknown) => toHttpError(error, null, { mapError: storeUnavailable });
  const primary = () => {
    const p = deps.agent.runtime.router.primary;
    return `${p.provider}/${p.model}`;
  };
  app.post("/v1/chat/completions", {
    config: { jsonBody: true },
    // While stopping, a 503 before the body is read.
    onRequest: (_request, _reply, done) => done(gateway.isStopping ? unavailable() : undefined),
    handler: async (request, reply) => {
      const body = jsonBodyOf(request);
      const model = (body as { model?: unknown } | null)?.model;
      const dispatch = catalog.dispatch(typeof model === "string" ? model : undefined);
      // A model that is not a string is the agent schema's to name.
      if (dispatch === null) throw modelNotFound(String(model), catalog);
      reply.hijack();
      const { raw: req } = request;
      const res = reply.raw;
      if (dispatch.mode === "agent")
        return serveChat(
          req,
          res,
          body,
          {
            launch: (turn) => gateway.launch(turn),
            stopping: () => gateway.isStopping,
            now: deps.now,
            model: primary,
            streamBufferBytes: deps.config.gateway.stream_buffer_kb * 1024,
            clientSystem: deps.config.gateway.client_system,
          },
          mapped,
        );
      const sessionId = headerValue(req.headers["x-session-id"]);
      try {
        await gateway.admitCall((signal) =>
          deps.modelCall({
            target: dispatch.target,
            body: body as Record<string, unknown>,
            ...(sessionId === undefined ? {} : { sessionId }),
            req,
            res,
            signal,
          }),
        );
      } catch (error) {
        const failure = mapped(error);
        if (res.headersSent) res.end();
        else sendJson(res, failure.status, failure.toJSON(), failure.headers);
      }
    },
  });
}
