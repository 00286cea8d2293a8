// A real `tenax gateway run` as a child process (the built CLI), on a profile whose model is a
// simulator running in the test process; it is stopped after each test that starts one. The child
// gets the home's test key as TENAX_API_KEY (test/helpers/cli.ts): send it with `gw.fetch` or
// `gw.auth`, or as `apiKey: gw.key` in an OpenAI client.
import { afterEach, expect } from "vitest";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { type ListeningProcess, runToEnd, startListening } from "./listening.js";
import { profileWith } from "./temp-home.js";
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
  const listed = models ? `, models: ${JSON.stringify(models)}` : "";
  const paths = profileWith(
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}"${listed} }\n${gateway ? `gateway: { ${gateway} }\n` : ""}${tools}\n`,
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
