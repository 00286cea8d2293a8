// A real `tenax dashboard` as a child process (the built CLI), stopped after each test that starts
// one, and the URL it printed; plus a free port for a gateway that must come back at the same address.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterEach } from "vitest";
import { BIN, cliEnvironment, ROOT } from "./cli.js";

export interface DashboardProcess {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | null>;
}

const started: ChildProcess[] = [];

afterEach(() => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

/** Start `tenax dashboard` and wait for its "listening" line; rejects with its output if it exits first. */
export function startDashboard(home: string, args: string[] = ["--port", "0"]): Promise<DashboardProcess> {
  const child = spawn(process.execPath, [BIN, "dashboard", ...args], {
    cwd: ROOT,
    env: cliEnvironment(home),
  });
  started.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the dashboard did not start:\n${stdout}\n${stderr}`)),
      15_000,
    );
    const check = () => {
      const match = /dashboard listening on (http:\/\/\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off("data", check);
      resolve({ child, url: match[1] ?? "", stdout: () => stdout, stderr: () => stderr, exited });
    };
    child.stdout.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the dashboard exited (${code}) before listening:\n${stdout}\n${stderr}`));
    });
  });
}

/** A port nothing listens on right now (the OS's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
