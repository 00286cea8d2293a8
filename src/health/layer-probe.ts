import { Worker } from "node:worker_threads";
import type { TenaxConfig } from "../config/schema.js";
import type { ProfilePaths } from "../profile/paths.js";
import { collectStatus, openForStatus, type StatusReport } from "./status.js";

export async function probeLayers(
  paths: ProfilePaths,
  config: TenaxConfig,
  now: number,
): Promise<StatusReport> {
  // A store that cannot even be opened is the store layer down (damaged, when it is damage), so the
  // monitor can stop the writer, as for damage a read meets.
  const opened = await openForStatus(paths, config);
  try {
    return await collectStatus({ paths, config, ...opened, now });
  } finally {
    opened.reader?.close();
  }
}

export type LayerProbe = (signal: AbortSignal) => Promise<StatusReport>;

/**
 * Probes in a worker thread (the built file next to this one). Aborting a probe ends its thread,
 * so a hung SQLite call cannot pile up threads. The first thread starts at once, while the gateway
 * still starts: loading its modules takes seconds on a busy machine, and a first look that had to
 * wait for that would read as a store check that does not answer.
 */
export function workerProbe(
  paths: ProfilePaths,
  config: TenaxConfig,
): LayerProbe & { close(): Promise<void> } {
  let seq = 0;
  let worker: Worker | null = null;
  const spawn = () => {
    const w = new Worker(new URL("./probe-worker.js", import.meta.url), { workerData: { paths, config } });
    w.unref();
    // A thread that fails between probes (no probe listens then) is replaced by the next probe.
    w.on("error", () => undefined);
    w.once("exit", () => {
      if (worker === w) worker = null;
    });
    return w;
  };
  worker = spawn();
  const probe = (signal: AbortSignal) =>
    new Promise<StatusReport>((resolve, reject) => {
      if (worker === null) worker = spawn();
      const w = worker;
      const id = ++seq;
      const cleanup = () => {
        w.off("message", onMessage);
        w.off("error", onError);
        w.off("exit", onExit);
        signal.removeEventListener("abort", onAbort);
      };
      const onMessage = (m: { id: number; report?: StatusReport; error?: string }) => {
        if (m.id !== id) return;
        cleanup();
        if (m.report) resolve(m.report);
        else reject(new Error(m.error ?? "the probe failed"));
      };
      const retire = () => {
        if (worker === w) worker = null;
        void w.terminate();
      };
      const onError = (error: Error) => {
        cleanup();
        retire();
        reject(error);
      };
      const onExit = (code: number) => {
        cleanup();
        if (worker === w) worker = null;
        reject(new Error(`the probe thread exited (${code})`));
      };
      const onAbort = () => {
        cleanup();
        retire();
        reject(signal.reason instanceof Error ? signal.reason : new Error("the probe was stopped"));
      };
      w.on("message", onMessage);
      w.once("error", onError);
      w.once("exit", onExit);
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      w.postMessage({ id });
    });
  return Object.assign(probe, {
    close: async () => {
      const w = worker;
      worker = null;
      if (w) await w.terminate();
    },
  });
}
