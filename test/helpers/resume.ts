// Resume and watchdog tests share this: an agent on a real store over a simulator, closed after
// each test, the pid of an ended process (a lease owner nobody runs), and a host in miniature.
import { spawn } from "node:child_process";
import { afterEach } from "vitest";
import { Agent } from "../../src/agent/agent.js";
import type { HostedWork, TurnHost } from "../../src/agent/resume.js";
import { configSchema } from "../../src/config/schema.js";
import { type Simulator, startSimulator } from "../../src/llm/simulator/server.js";
import { openStore, releaseStore } from "../../src/store/registry.js";
import type { Store } from "../../src/store/store.js";
import { tempDir, tempProfile } from "./tmp.js";

export const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

export async function setupAgent() {
  const sim: Simulator = await startSimulator();
  cleanups.push(() => sim.close());
  const paths = tempProfile();
  const store: Store = await openStore(paths, { integrityCheckTimeoutMs: 0 });
  cleanups.push(() => releaseStore(store));
  const config = configSchema.parse({
    model: { provider: "sim", name: "echo" },
    providers: { sim: { type: "simulator", base_url: sim.url, api_keys: ["sk-resume"] } },
    retry: { max_attempts: 1 },
  });
  const agent = await Agent.create({ paths, config, store });
  cleanups.push(() => agent.close());
  const session = await agent.newSession();
  const project = tempDir("tenax-project-");
  return { sim, store, agent, session, project };
}

/** The pid of a process that has ended: a lease owner nobody runs any more. */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((r) => child.on("close", r));
  return child.pid ?? 0;
}

/** A host that runs resumed turns at once and records them (the gateway's track, in miniature). */
export function host(running: (sessionId: string) => boolean = () => false): TurnHost<never> & {
  tracked: string[];
  interrupted: string[];
} {
  const tracked: string[] = [];
  const interrupted: string[] = [];
  return {
    tracked,
    interrupted,
    track(sessionId: string, work: HostedWork) {
      tracked.push(sessionId);
      return { result: work(new AbortController().signal, () => {}) };
    },
    isRunning: running,
    interrupt: (sessionId) => {
      if (!running(sessionId)) return false;
      interrupted.push(sessionId);
      return true;
    },
  };
}
