// What every load bench does around the load generator: its servers as child processes (started,
// waited for, stopped), and one run of gateway-load.js on a plan, its progress logged and its JSON
// result read back. The gateway and the framework benches share it, so their targets are measured
// the same way.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LoadPlan, LoadResult } from "./gateway-load.js";

const HERE = dirname(fileURLToPath(import.meta.url));

export interface Child {
  child: ChildProcess;
  exited: Promise<void>;
  output: () => string;
}

/**
 * `node ARGS` as a child; with a `wrapper` (e.g. `strace ... -o FILE`), that command runs node, and
 * the child is the wrapper's process, not node's.
 */
export function launch(args: string[], env: NodeJS.ProcessEnv = process.env, wrapper: string[] = []): Child {
  const [command = process.execPath, ...prefix] = [...wrapper, process.execPath];
  const child = spawn(command, [...prefix, ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  child.stderr?.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
  return { child, exited, output: () => out };
}

export async function waitFor<T>(
  what: string,
  c: Child,
  find: (out: string) => T | null,
  ms = 30_000,
): Promise<T> {
  const deadline = performance.now() + ms;
  let gone = false;
  void c.exited.then(() => {
    gone = true;
  });
  while (performance.now() < deadline) {
    const found = find(c.output());
    if (found !== null) return found;
    if (gone) throw new Error(`${what} exited before it was ready:\n${c.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what} not ready within ${ms} ms:\n${c.output()}`);
}

/** The URL a child prints as its first JSON line (`{"url": ...}`) once it listens. */
export function printedUrl(what: string, c: Child): Promise<string> {
  return waitFor(what, c, (out) => {
    const line = out.split("\n").find((l) => l.startsWith("{"));
    return line ? (JSON.parse(line) as { url: string }).url : null;
  });
}

/** SIGTERM each child, last started first; SIGKILL one that has not gone within 5 s. */
export async function stopAll(children: Child[]): Promise<void> {
  for (const c of [...children].reverse()) {
    c.child.kill("SIGTERM");
    await Promise.race([c.exited, new Promise((r) => setTimeout(r, 5000))]);
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill("SIGKILL");
  }
}

/** One run of the load generator, in a process of its own, on `plan`. */
export async function runLoad(plan: LoadPlan, log: (line: string) => void): Promise<LoadResult> {
  const load = launch([join(HERE, "gateway-load.js"), JSON.stringify(plan)]);
  load.child.stderr?.on("data", (c: string) => {
    for (const line of c.split("\n")) if (line.trim() !== "") log(line);
  });
  await load.exited;
  const line = load
    .output()
    .split("\n")
    .find((l) => l.startsWith('{"open"'));
  if (line === undefined) throw new Error(`the load generator failed:\n${load.output()}`);
  return JSON.parse(line) as LoadResult;
}

/** A port nothing listens on now (the kernel's pick for port 0). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}
