// One look at a profile's layers as `tenax status` sees them (store read-only, key ledger,
// compression cooldown), and the way the gateway runs that look in the background: in a worker
// thread, with a deadline. A probe that does not answer in time has its thread ended and is
// reported as hung; the next one starts a fresh thread.
import { existsSync } from "node:fs";
import { Worker } from "node:worker_threads";
import type { ProfilePaths } from "../config/paths.js";
import type { TenaxConfig } from "../config/schema.js";
import { openReader } from "../store/registry.js";
import { collectStatus, type StatusReport } from "./status.js";

export async function probeLayers(
  paths: ProfilePaths,
  config: TenaxConfig,
  now: number,
): Promise<StatusReport> {
  if (!existsSync(paths.state)) return collectStatus({ paths, config, reader: null, now });
  // A store that cannot be opened fails the probe, which /health reports with the last good result.
  const reader = openReader(paths);
  try {
    return await collectStatus({ paths, config, reader, now });
  } finally {
    reader.close();
  }
}

export type LayerProbe = (signal: AbortSignal) => Promise<StatusReport>;

/**
 * Probes in a worker thread (the built file next to this one). Aborting a probe ends its thread,
 * so a hung SQLite call cannot pile up threads.
 */
export function workerProbe(
  paths: ProfilePaths,
  config: TenaxConfig,
): LayerProbe & { close(): Promise<void> } {
  let worker: Worker | null = null;
  let seq = 0;
  const spawn = () => {
    const w = new Worker(new URL("./probe-worker.js", import.meta.url), { workerData: { paths, config } });
    w.unref();
    return w;
  };
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
