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
  /**
   * CPU time of the check's thread, its start included, where the system tells it (Linux's
   * /proc/thread-self); less than duration_ms on a busy machine, where the thread waits its turn.
   */
  cpu_ms?: number;
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const { readFileSync } = require("node:fs");
const Database = require(workerData.driver);
// utime and stime of this thread, in clock ticks of 10 ms (USER_HZ), after the name in parentheses.
const cpuMs = () => {
  try {
    const stat = readFileSync("/proc/thread-self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ms = (Number(fields[11]) + Number(fields[12])) * 10;
    return Number.isFinite(ms) ? ms : undefined;
  } catch { return undefined; }
};
let rows;
try {
  const db = new Database(workerData.path, { readonly: true, fileMustExist: true, timeout: 5000 });
  const check = (table) =>
    db.pragma((workerData.mode === "full" ? "integrity_check" : "quick_check") + (table === null ? "(20)" : '("' + table.replace(/"/g, '""') + '")'), { simple: false })
      .map((r) => String(Object.values(r)[0]));
  try {
    if (workerData.scope === "tables") {
      // Each plain table's b-tree (and its indexes), on one snapshot; no virtual table's own check.
      db.exec("BEGIN");
      const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'").pluck().all();
      const found = tables.flatMap((t) => check(t).filter((r) => r !== "ok")).slice(0, 20);
      db.exec("COMMIT");
      rows = found.length === 0 ? ["ok"] : found;
    } else {
      rows = check(null);
    }
  } finally { db.close(); }
  parentPort.postMessage({ ok: rows.length === 1 && rows[0] === "ok", detail: rows, cpu_ms: cpuMs() });
} catch (error) {
  parentPort.postMessage({ ok: false, error: String(error && error.code || ""), detail: [String(error && error.message || error)], cpu_ms: cpuMs() });
}
`;

const driverPath = createRequire(import.meta.url).resolve("better-sqlite3");

export interface IntegrityOptions {
  mode?: "quick" | "full";
  /**
   * "file" (the default): the whole file, with the freelist, pages used twice or never, and each
   * virtual table's own check (FTS5's, the bulk of search.db's cost). "tables": each plain
   * table's b-tree and its indexes, on one snapshot, and nothing else.
   */
  scope?: "file" | "tables";
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
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { path, mode, scope: options.scope ?? "file", driver: driverPath },
    });
    worker.unref();
    const finish = (status: IntegrityStatus, detail: string[], cpuMs?: number) => {
      const result: IntegrityResult = {
        status,
        mode,
        detail,
        checked_at: now(),
        duration_ms: now() - started,
        ...(cpuMs === undefined ? {} : { cpu_ms: cpuMs }),
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
    worker.once("message", (msg: { ok: boolean; error?: string; detail: string[]; cpu_ms?: number }) => {
      const corrupt = msg.ok === false && (msg.error === undefined || /CORRUPT|NOTADB/.test(msg.error));
      finish(msg.ok ? "ok" : corrupt ? "corrupt" : "unknown", msg.detail.slice(0, 20), msg.cpu_ms);
      void worker.terminate();
    });
    worker.once("error", (error) => finish("unknown", [error.message]));
  });
}
