// An agent on a real store in a temp profile, over a simulator on real HTTP, with a session and a
// project folder; all of it closed after each test. `extra` adds config keys. Commands run
// (tools.exec.mode full), on the machine (sandbox none: these tests read the pids and marks of
// what commands start), unless `extra.tools` sets a policy. `options.agentStore` gives the agent
// a stand-in made from the real store (one that refuses some writes, say); `store` is the real one.
import { afterEach } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import { configSchema } from "../../src/config/schema.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import { tempDir, tempProfile } from "./tmp.js";

export const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export interface SetupAgentOptions {
  /** The store the agent is given, made from the real one; the real one by default. */
  agentStore?: (real: Store) => Store;
}

export async function setupAgent(extra: Record<string, unknown> = {}, options: SetupAgentOptions = {}) {
  const sim: Simulator = await startSimulator();
  cleanups.push(() => sim.close());
  const paths = tempProfile();
  const store: Store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  cleanups.push(() => releaseStore(store));
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: { sim: { type: "simulator", base_url: sim.url, api_keys: ["sk-test"] } },
    retry: { max_attempts: 1 },
    // These tests drive the agent's mechanics; the exec policy is tested on its own
    // (test/exec-approvals.test.ts) and so is the sandbox (src/agent/sandbox/sandbox.test.ts,
    // test/agent-secrets.test.ts), so commands run unless a test asks for a policy.
    tools: { exec: { mode: "full", sandbox: "none" } },
    ...extra,
  });
  const agent = await Agent.create({ paths, config, store: options.agentStore?.(store) ?? store });
  cleanups.push(() => agent.close());
  const session = await agent.newSession();
  const project = tempDir("tenax-project-");
  return { sim, store, agent, session, project, paths };
}
