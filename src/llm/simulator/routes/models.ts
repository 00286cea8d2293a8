// GET /v1/models (every model the simulator serves) and GET /v1/models/ID, where ID may hold
// slashes; a model it does not serve is a 404 model_not_found.
import type { App } from "../../../http/app.js";
import type { SimRouteDeps } from "../app.js";
import { modelNotFound, modelObject, simError } from "../respond.js";

export function registerModelRoutes(app: App, deps: SimRouteDeps): void {
  app.get("/v1/models", { config: { rawBody: true } }, async () => ({
    object: "list",
    data: Object.keys(deps.models).map(modelObject),
  }));
  app.get<{ Params: { "*": string } }>("/v1/models/*", { config: { rawBody: true } }, async (request) => {
    const id = request.params["*"];
    if (!deps.models[id]) throw simError(404, modelNotFound(id));
    return modelObject(id);
  });
}
