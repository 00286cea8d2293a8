// GET /v1/models (tenax and every configured provider/model with its context window) and
// GET /v1/models/ID, where ID may hold slashes (main/some-model).
import type { App } from "../../http/app.js";
import { HttpError } from "../../http/http-error.js";
import type { GatewayRouteDeps } from "../app.js";
import type { ModelCatalog } from "../model-catalog.js";

export function registerModelRoutes(app: App, deps: GatewayRouteDeps, catalog: ModelCatalog): void {
  const created = () => Math.floor(deps.now() / 1000);
  app.get("/v1/models", async () => ({ object: "list", data: catalog.list(created()) }));
  app.get<{ Params: { "*": string } }>("/v1/models/*", async (request) => {
    const id = request.params["*"].replace(/\/+$/, "");
    const info = catalog.info(id, created());
    if (info === null) throw modelNotFound(id, catalog);
    return info;
  });
}

/** 404 for a model id this gateway does not serve, listing the ones it does. */
export function modelNotFound(id: string, catalog: ModelCatalog): HttpError {
  return new HttpError(
    404,
    "not_found_error",
    "model_not_found",
    `no model ${JSON.stringify(id)} here; use one of: ${catalog.ids().join(", ")} (tenax is the agent, a whole turn with Tenax's tools; PROVIDER/NAME is one model call), or set gateway.default_model to send unknown ids to one of them`,
    {},
    { error: { param: "model" } },
  );
}
