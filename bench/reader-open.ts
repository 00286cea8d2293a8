// What the dashboard does first: open a read-only reader, list the recent sessions and load one
// 200-message transcript. Each repeat opens a new reader, so its page cache starts empty (the
// operating system's file cache is warm, as it is on a running server).
import type { ProfilePaths } from "../src/profile/paths.js";
import { openReader } from "../src/store/registry.js";
import { median, quantile } from "./stats.js";

interface Step {
  first_ms: number;
  median_ms: number;
  p95_ms: number;
}

export interface ReaderResult {
  repeats: number;
  open: Step;
  list_sessions: Step & { sessions: number };
  get_messages: Step & { messages: number };
}

function step(ms: number[]): Step {
  return { first_ms: ms[0] ?? Number.NaN, median_ms: median(ms), p95_ms: quantile(ms, 0.95) };
}

export async function runReaderBench(
  paths: ProfilePaths,
  sessionId: string,
  repeats: number,
): Promise<ReaderResult> {
  const open: number[] = [];
  const list: number[] = [];
  const get: number[] = [];
  let sessions = 0;
  let messages = 0;
  for (let i = 0; i < repeats; i++) {
    let t = performance.now();
    const reader = openReader(paths);
    open.push(performance.now() - t);
    try {
      t = performance.now();
      sessions = (await reader.listSessions()).length;
      list.push(performance.now() - t);
      t = performance.now();
      messages = (await reader.getMessages(sessionId)).length;
      get.push(performance.now() - t);
    } finally {
      reader.close();
    }
  }
  return {
    repeats,
    open: step(open),
    list_sessions: { ...step(list), sessions },
    get_messages: { ...step(get), messages },
  };
}
