// A real `tenax gateway run` (and other `tenax` commands) as child processes of the drill, on a
// scratch TENAX_HOME: started from this checkout's bin/tenax.js, awaited until it says where it
// listens, killed with SIGKILL or stopped with SIGTERM.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { GATEWAY_KEY_VARIABLE } from "../config/gateway-key.js";
import { loadConfig } from "../config/load.js";
import { DEFAULT_PROFILE, profilePaths } from "../profile/paths.js";
import type { ScenarioContext } from "./runner.js";

/** bin/tenax.js of this checkout (this file is src/drill or dist/drill, two levels below). */
export const TENAX_BIN = fileURLToPath(new URL("../../bin/tenax.js", import.meta.url));

const LISTEN_TIMEOUT_MS = 15_000;

export interface GatewayChild {
  child: ChildProcess;
  url: string;
  /** The key it wants, found as any client of the profile finds it (config, environment, .env). */
  key: string | undefined;
  /** Everything it printed so far, stdout and stderr together. */
  output(): string;
  exited: Promise<number | null>;
}

/**
 * The environment of a child: this one's, with TENAX_HOME (and HOME) on the scratch home only,
 * and without the user's own gateway key: the scratch gateway writes its own to the scratch .env.
 */
export function scratchEnvironment(home: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TENAX_HOME: home, HOME: home };
  delete env.TENAX_PROFILE;
  delete env[GATEWAY_KEY_VARIABLE];
  return env;
}

function spawnTenax(
  home: string,
  args: string[],
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [TENAX_BIN, ...args], {
    cwd: home,
    env: scratchEnvironment(home),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.setEncoding("utf8").on("data", (c: string) => {
    output += c;
  });
  child.stderr?.setEncoding("utf8").on("data", (c: string) => {
    output += c;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Start `tenax gateway run --port 0` and wait for its "gateway listening on URL" line. */
export async function startGateway(home: string): Promise<GatewayChild> {
  const { child, output, exited } = spawnTenax(home, ["gateway", "run", "--port", "0"]);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`the gateway did not start within ${LISTEN_TIMEOUT_MS / 1000} s:\n${output()}`));
    }, LISTEN_TIMEOUT_MS);
    const check = () => {
      const match = /gateway listening on (http:\/\/\S+)/.exec(output());
      if (!match?.[1]) return;
      clearTimeout(timer);
      child.stdout?.off("data", check);
      resolve(match[1]);
    };
    child.stdout?.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the gateway exited (${code}) before listening:\n${output()}`));
    });
  });
  const env = scratchEnvironment(home);
  const key = loadConfig(profilePaths(home, DEFAULT_PROFILE), env).config.gateway.api_key;
  return { child, url, key, output, exited };
}

/** SIGKILL, as a crash would; resolves once it is gone. */
export async function killHard(gateway: GatewayChild): Promise<void> {
  if (gateway.child.exitCode === null && gateway.child.signalCode === null) gateway.child.kill("SIGKILL");
  await gateway.exited;
}

/** SIGTERM (a draining stop), then SIGKILL if it is still there after `graceMs`. */
export async function stopGateway(gateway: GatewayChild, graceMs = 10_000): Promise<void> {
  if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return;
  gateway.child.kill("SIGTERM");
  const timer = setTimeout(() => gateway.child.kill("SIGKILL"), graceMs);
  await gateway.exited;
  clearTimeout(timer);
}

/** Run `tenax ARGS` on the scratch home to its end. */
export async function runTenax(
  home: string,
  args: string[],
): Promise<{ code: number | null; output: string }> {
  const { output, exited } = spawnTenax(home, args);
  const code = await exited;
  return { code, output: output() };
}

/** A gateway for the scenario's scratch home, killed when the scenario ends if it still runs. */
export async function scenarioGateway(context: ScenarioContext): Promise<GatewayChild> {
  const gateway = await startGateway(context.home);
  context.defer(() => killHard(gateway));
  return gateway;
}
