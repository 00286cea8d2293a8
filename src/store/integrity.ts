// SQLite's own page check, run on a read-only connection in a worker thread so that it is bounded
// in time for the caller: past the budget the caller gets "unknown" at once, and the late result
// still arrives through onLate.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

export type IntegrityStatus = "ok" | "corrupt" | "unknown";

export interface IntegrityResult {
  status: IntegrityStatus;
  mode: "quick" | "full";
  /** SQLite's findings (at most 20), or why the check could not finish. */
  detail: string[];
  checked_at: number;
  duration_ms: number;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
let rows;
try {
  const db = new Database(workerData.path, { readonly: true, fileMustExist: true, timeout: 5000 });
  try {
    rows = db.pragma((workerData.mode === "full" ? "integrity_check" : "quick_check") + "(20)", { simple: false })
      .map((r) => String(Object.values(r)[0]));
  } finally { db.close(); }
  parentPort.postMessage({ ok: rows.length === 1 && rows[0] === "ok", detail: rows });
} catch (error) {
  parentPort.postMessage({ ok: false, error: String(error && error.code || ""), detail: [String(error && error.message || error)] });
}
`;

const driverPath = createRequire(import.meta.url).resolve("better-sqlite3");

export interface IntegrityOptions {
  mode?: "quick" | "full";
  timeoutMs: number;
  now?: () => number;
  /** Called with the real result when the check outlives its budget. */
  onLate?: (result: IntegrityResult) => void;
}

export function checkIntegrity(path: string, options: IntegrityOptions): Promise<IntegrityResult> {
  const now = options.now ?? Date.now;
  const mode = options.mode ?? "quick";
  const started = now();
  return new Promise((resolve) => {
    let settled = false;
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, mode, driver: driverPath } });
    worker.unref();
    const finish = (status: IntegrityStatus, detail: string[]) => {
      const result: IntegrityResult = {
        status,
        mode,
        detail,
        checked_at: now(),
        duration_ms: now() - started,
      };
      if (settled) {
        options.onLate?.(result);
        return;
      }
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const timer = setTimeout(() => {
      settled = true;
      resolve({
        status: "unknown",
        mode,
        detail: [`the check did not finish within ${options.timeoutMs} ms; it goes on in the background`],
        checked_at: now(),
        duration_ms: now() - started,
      });
    }, options.timeoutMs);
    timer.unref();
    worker.once("message", (msg: { ok: boolean; error?: string; detail: string[] }) => {
      const corrupt = msg.ok === false && (msg.error === undefined || /CORRUPT|NOTADB/.test(msg.error));
      finish(msg.ok ? "ok" : corrupt ? "corrupt" : "unknown", msg.detail.slice(0, 20));
      void worker.terminate();
    });
    worker.once("error", (error) => finish("unknown", [error.message]));
  });
}
