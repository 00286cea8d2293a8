// A real `tenax gateway run` as a child process (the built CLI), on a profile whose model is a
// simulator running in the test process; it is stopped after each test that starts one.
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach } from "vitest";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { BIN, cliEnvironment, ROOT } from "./cli.js";
import { profileWith } from "./temp-home.js";

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

const started: ChildProcess[] = [];
const sims: Simulator[] = [];

afterEach(async () => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  for (const sim of sims.splice(0)) await sim.close();
});

/** A profile whose model is a fresh simulator; `gateway` is extra YAML for the gateway section. */
export async function simProfile(gateway = "") {
  const sim = await startSimulator();
  sims.push(sim);
  const paths = profileWith(
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\n${gateway ? `gateway: { ${gateway} }\n` : ""}`,
  );
  return { sim, paths, home: paths.home };
}

/**
 * Start a gateway and wait for its "listening" line; rejects with its output if it exits first.
 * `command` is what starts it: `gateway run` by default, or `up`.
 */
export function startGateway(
  home: string,
  args: string[] = ["--port", "0"],
  command: string[] = ["gateway", "run"],
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [BIN, ...command, ...args], {
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
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code, signal) => {
      if (signal) stderr += `\n(killed by ${signal})`;
      resolve(code);
    }),
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the gateway did not start:\n${stdout}\n${stderr}`)),
      15_000,
    );
    const check = () => {
      const match = /gateway listening on (http:\/\/\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      child.stdout.off("data", check);
      resolve({ child, url: match[1] ?? "", stdout: () => stdout, stderr: () => stderr, exited });
    };
    child.stdout.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited (${code}) before listening:\n${stdout}\n${stderr}`));
    });
  });
}

/** Start a gateway expected to refuse; resolves with its exit code and output. */
export async function refusedGateway(home: string, args: string[] = ["--port", "0"]) {
  const child = spawn(process.execPath, [BIN, "gateway", "run", ...args], {
    cwd: ROOT,
    env: cliEnvironment(home),
  });
  started.push(child);
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { status, output: out };
}

export async function until(what: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}
