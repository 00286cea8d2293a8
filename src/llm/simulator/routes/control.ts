// The control endpoints a test or a person drives the simulator with over HTTP: POST /__sim/script
// (queue steps), GET /__sim/requests (what it received), POST /__sim/reset. They are not recorded.
import type { App } from "../../../http/app.js";
import type { SimRouteDeps } from "../app.js";
import { parseJson, simError } from "../respond.js";
import { SimulatorScriptError } from "../steps.js";
import { errorBody } from "../wire.js";

export function registerControlRoutes(app: App, deps: SimRouteDeps): void {
  const { state } = deps;
  // Any media type: `curl -d` sends a script as a form unless told otherwise.
  app.post("/__sim/script", { config: { rawBody: true } }, async (request) => {
    const body = parseJson(typeof request.body === "string" ? request.body : "");
    if (body === null)
      throw simError(
        400,
        errorBody(
          "the script must be a JSON array of steps",
          "invalid_request_error",
          "simulator_script_invalid",
        ),
      );
    try {
      state.script(body);
    } catch (error) {
      if (!SimulatorScriptError.isInstance(error)) throw error;
      throw simError(400, errorBody(error.message, "invalid_request_error", error.code));
    }
    return { queued: state.queued() };
  });
  app.get("/__sim/requests", { config: { rawBody: true } }, async () => ({ requests: state.requests() }));
  app.post("/__sim/reset", { config: { rawBody: true } }, async () => {
    state.reset();
    return { ok: true };
  });
}
