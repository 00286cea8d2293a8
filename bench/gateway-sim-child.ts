// The gateway bench's simulator, in a process of its own so that neither the load generator nor a
// gateway shares its event loop. Prints its base URL as one JSON line; SIGTERM closes it.
import { startSimulator } from "../src/llm/simulator/server.js";

const sim = await startSimulator();
// The simulator records every request; forget them now and then so a long run's memory stays flat,
// but never while a bench's script (POST /__sim/script) waits for its request: reset drops it too.
setInterval(() => {
  if (sim.queued() === 0) sim.reset();
}, 1000);
process.stdout.write(`${JSON.stringify({ url: sim.url })}\n`);
process.on("SIGTERM", () => {
  void sim.close().finally(() => process.exit(0));
});
