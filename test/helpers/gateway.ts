// A real `tenax gateway run` as a child process (the built CLI), on a profile whose model is a
// simulator running in the test process; it is stopped after each test that starts one. The child
// gets the home's test key as TENAX_API_KEY (test/helpers/cli.ts): send it with `gw.fetch` or
// `gw.auth`, or as `apiKey: gw.key` in an OpenAI client.
import { mkdirSync, writeFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, beforeEach, expect } from "vitest";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { DEFAULT_PROFILE, profilePaths } from "../../src/profile/paths.js";
import { type ListeningProcess, runToEnd, startLasting, startListening } from "./listening.js";
import { profileWith } from "./temp-home.js";
import { lastingTempDir } from "./tmp.js";
import { until as untilHolds } from "./until.js";

export type GatewayProcess = ListeningProcess;

const sims: Simulator[] = [];

afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

/**
 * A profile whose model is a fresh simulator; `gateway` is extra YAML for the gateway section.
 * Its commands run (tools.exec.mode full): these tests are of the gateway, and the exec policy
 * has tests of its own; `tools` replaces that section.
 */
/**
 * A profile whose model is `sim/echo` on a simulator of its own. `gateway`: keys of the gateway
 * section; `models`: the simulator's models (such as an echo with a larger window), which the
 * profile's provider entry lists too, so both sides agree on each model's limits.
 */
export async function simProfile(
  gateway = "",
  tools = "tools: { exec: { mode: full } }",
  models?: Record<string, { context_window: number; max_output_tokens: number }>,
) {
  const sim = await startSimulator(models ? { models } : {});
  sims.push(sim);
  const paths = profileWith(simConfig(sim, gateway, tools, models));
  return { sim, paths, home: paths.home };
}

function simConfig(
  sim: Simulator,
  gateway: string,
  tools: string,
  models?: Record<string, { context_window: number; max_output_tokens: number }>,
): string {
  const listed = models ? `, models: ${JSON.stringify(models)}` : "";
  return `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}"${listed} }\n${gateway ? `gateway: { ${gateway} }\n` : ""}${tools}\n`;
}

export interface SharedGateway {
  gw: GatewayProcess;
  sim: Simulator;
  home: string;
}

/**
 * One gateway on a simProfile for the tests of the enclosing describe, for tests that do not
 * interfere (each its own runs and sessions): started before the first, stopped and its home
 * removed after the last. Before each test the simulator forgets its script and its requests, so
 * a test sees only its own model calls. Call the returned function inside a test.
 */
export function sharedSimGateway(
  gateway = "",
  tools = "tools: { exec: { mode: full } }",
  models?: Record<string, { context_window: number; max_output_tokens: number }>,
): () => SharedGateway {
  let shared: SharedGateway | null = null;
  let remove = () => {};
  beforeAll(async () => {
    const sim = await startSimulator(models ? { models } : {});
    const home = lastingTempDir("tenax-");
    remove = home.remove;
    const paths = profilePaths(home.dir, DEFAULT_PROFILE);
    mkdirSync(paths.dir, { recursive: true });
    writeFileSync(paths.config, simConfig(sim, gateway, tools, models), { mode: 0o600 });
    try {
      shared = {
        gw: await startLasting(home.dir, ["gateway", "run", "--port", "0"], "gateway"),
        sim,
        home: home.dir,
      };
    } catch (error) {
      await sim.close();
      remove();
      throw error;
    }
  });
  beforeEach(() => shared?.sim.reset());
  afterAll(async () => {
    if (shared === null) return;
    const { gw, sim } = shared;
    shared = null;
    if (gw.child.exitCode === null && gw.child.signalCode === null) {
      gw.child.kill("SIGKILL");
      await gw.exited;
    }
    await sim.close();
    remove();
  });
  return () => {
    if (shared === null)
      throw new Error("the shared gateway is not running (used outside its describe's tests?)");
    return shared;
  };
}

/**
 * Start a gateway and wait for its "listening" line; rejects with its output if it exits first.
 * `command` is what starts it: `gateway run` by default, or `up`.
 */
export function startGateway(
  home: string,
  args: string[] = ["--port", "0"],
  command: string[] = ["gateway", "run"],
  env: NodeJS.ProcessEnv = {},
): Promise<GatewayProcess> {
  return startListening(home, [...command, ...args], "gateway", env);
}

/** Start a gateway expected to refuse; resolves with its exit code and output. */
export function refusedGateway(home: string, args: string[] = ["--port", "0"], env: NodeJS.ProcessEnv = {}) {
  return runToEnd(home, ["gateway", "run", ...args], env);
}

/** An error answer in the OpenAI shape, with the status and code expected and a real message. */
export async function expectError(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  const body = (await response.json()) as { error: { message: string; type: string; code: string } };
  expect(body.error.code).toBe(code);
  expect(typeof body.error.type).toBe("string");
  expect(body.error.message.length).toBeGreaterThan(10);
  return body.error;
}

export async function until(what: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  await untilHolds(what, ms, "the awaited condition");
}
