// The layer probe's own thread: it reads the store read-only and builds the same report as
// `tenax status`, so a store that hangs (a lock held, a stuck disk) hangs this thread and never
// the gateway's, whose /health keeps answering with the last result and its age.
import { parentPort, workerData } from "node:worker_threads";
import type { TenaxConfig } from "../config/schema.js";
import type { ProfilePaths } from "../profile/paths.js";
import { probeLayers } from "./layer-probe.js";

interface ProbeData {
  paths: ProfilePaths;
  config: TenaxConfig;
}

const data = workerData as ProbeData;
parentPort?.on("message", (message: { id: number }) => {
  probeLayers(data.paths, data.config, Date.now()).then(
    (report) => parentPort?.postMessage({ id: message.id, report }),
    (error: unknown) =>
      parentPort?.postMessage({
        id: message.id,
        error: error instanceof Error ? error.message : String(error),
      }),
  );
});
