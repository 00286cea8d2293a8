// The file system calls of a process traced with `strace -f -y -s 0 -o FILE` (every thread, each
// line led by its thread id, each file descriptor shown with its path), counted by call and by file
// between two marks: the lines
// where the process opened `mark-1.json.tmp` and `mark-2.json.tmp` (turn-profile-preload.ts writes
// them on SIGUSR2). The mark files' own calls are left out.
import { readFileSync } from "node:fs";
import { basename } from "node:path";

/** The calls traced: reads and writes at an offset (SQLite's), syncs, locks, plain writes, opens. */
export const TRACED_CALLS = [
  "pread64",
  "pwrite64",
  "preadv",
  "pwritev",
  "fdatasync",
  "fsync",
  "fcntl",
  "ftruncate",
  "write",
  "writev",
  "openat",
] as const;

export interface CallCount {
  calls: number;
  /** Bytes read or written (0 for the calls that move none). */
  bytes: number;
  /** Of the calls, those made on another thread than the main one (libuv's pool, workers). */
  off_main: number;
}

/** By call, then by file (basename; `socket` and `pipe` for those). */
export type IoCounts = Record<string, Record<string, CallCount>>;

export interface StraceWindow {
  /** Whether both marks were found (otherwise nothing was counted). */
  found: boolean;
  counts: IoCounts;
}

// `PID name(FD</path>, ...` ; an unfinished call is counted where it starts, its "resumed" line not.
const CALL = /^(\d+)\s+([a-z0-9_]+)\((\d+)<([^>]*)>(.*)$/;

function fileName(path: string): string {
  if (path.startsWith("socket:") || path.startsWith("TCP") || path.startsWith("UNIX")) return "socket";
  if (path.startsWith("pipe:")) return "pipe";
  if (path.startsWith("anon_inode:")) return path;
  return basename(path);
}

const MOVES_BYTES = new Set(["pread64", "pwrite64", "preadv", "pwritev", "write", "writev"]);

/** Bytes a read or write moved: its result, or for a call left unfinished, the count it asked for. */
function bytesOf(name: string, rest: string): number {
  if (!MOVES_BYTES.has(name)) return 0;
  const result = /\) = (\d+)$/.exec(rest);
  if (result?.[1] !== undefined) return Number(result[1]);
  // pread64/pwrite64/write(fd, buf, count[, offset]): with -s 0 the buffer prints as ""...
  const count = /^, ""(?:\.\.\.)?, (\d+)/.exec(rest);
  return count?.[1] !== undefined ? Number(count[1]) : 0;
}

export function countStraceWindow(logPath: string, markDir: string, mainPid: number): StraceWindow {
  const lines = readFileSync(logPath, "utf8").split("\n");
  const counts: IoCounts = {};
  let state: "before" | "inside" | "after" = "before";
  for (const line of lines) {
    if (line.includes("openat(") && line.includes(`${markDir}/mark-`)) {
      if (state === "before" && line.includes("mark-1.json")) state = "inside";
      else if (state === "inside" && line.includes("mark-2.json")) state = "after";
      continue;
    }
    if (state !== "inside" || line.includes(`${markDir}/mark-`)) continue;
    const m = CALL.exec(line);
    if (m === null) continue;
    const [, tid = "", name = "", , path = "", rest = ""] = m;
    const file = fileName(path);
    const byCall = counts[name] ?? {};
    const c = byCall[file] ?? { calls: 0, bytes: 0, off_main: 0 };
    c.calls++;
    if (Number(tid) !== mainPid) c.off_main++;
    c.bytes += bytesOf(name, rest);
    byCall[file] = c;
    counts[name] = byCall;
  }
  return { found: state === "after", counts };
}

/** Calls of `name` on files whose name passes `match`, summed. */
export function sumCalls(counts: IoCounts, name: string, match: (file: string) => boolean): CallCount {
  const sum = { calls: 0, bytes: 0, off_main: 0 };
  for (const [file, c] of Object.entries(counts[name] ?? {})) {
    if (!match(file)) continue;
    sum.calls += c.calls;
    sum.bytes += c.bytes;
    sum.off_main += c.off_main;
  }
  return sum;
}
