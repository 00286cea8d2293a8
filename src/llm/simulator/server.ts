// The simulator provider as a running server: its app (app.ts) on a port of its own, and the handle
// a test, the drill or `tenax simulator` drives it with (script, requests, reset, idle, close).
import { closeApp, listen, urlHost } from "../../http/listen.js";
import { buildSimulatorApp } from "./app.js";
import { SimulatorState } from "./state.js";
import type { Simulator, SimulatorOptions } from "./types.js";

export { buildSimulatorApp, type SimulatorAppDeps } from "./app.js";
export { SimulatorState } from "./state.js";
export type { SimModel, SimRequestEnd, SimRequestRecord, Simulator, SimulatorOptions } from "./types.js";
export { DEFAULT_SIM_MODELS } from "./types.js";

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? "127.0.0.1";
  const state = new SimulatorState();
  const app = buildSimulatorApp({
    state,
    ...(options.models ? { models: options.models } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
  });
  const port = await listen(app, host, options.port ?? 0, {
    name: "simulator",
    hint: "stop what uses it, or choose another port with --port P",
  });
  return {
    url: `http://${urlHost(host)}:${port}/v1`,
    port,
    script: (steps) => state.script(steps),
    queued: () => state.queued(),
    requests: () => state.requests(),
    reset: () => state.reset(),
    idle: () => state.idle(),
    async close() {
      state.cutOpen();
      await closeApp(app);
    },
  };
}
