// A process out of file descriptors is not a provider that is down: a real model call through
// the real openai client, from a child process that has used up its open-file limit, fails with
// EMFILE before any byte leaves the machine, and Tenax names it as its own process's problem
// (local_resources: no fallback, nothing held against the provider) with the fix.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { ROOT, requireBuild, runAsync } from "./helpers/cli.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const sims: Simulator[] = [];
afterEach(async () => {
  for (const sim of sims.splice(0)) await sim.close();
});

// Runs in the child: the profile's model runtime over the built code, every descriptor the limit
// allows taken, then one turn's model call; prints the classified error, or that it answered.
const CHILD = `
import { closeSync, openSync } from "node:fs";
const [root, url, backup] = process.argv.slice(2);
const { configSchema } = await import(root + "/dist/config/schema.js");
const { createModelRuntime } = await import(root + "/dist/llm/runtime.js");
const runtime = await createModelRuntime(configSchema.parse({
  model: { provider: "main", name: "echo" },
  providers: {
    main: { type: "openai", base_url: url, api_keys: ["sk-test-not-a-key"] },
    backup: { type: "openai", base_url: backup, api_keys: ["sk-test-not-a-key"] },
  },
  fallback: [{ provider: "backup", name: "echo" }],
}));
const held = [];
let code = null;
try { for (;;) held.push(openSync("/dev/null", "r")); } catch (error) { code = error.code; }
let result;
try {
  await runtime.router.turn().complete({ messages: [{ role: "user", content: "hello" }] });
  result = { answered: true };
} catch (error) {
  result = { classified: error.classified ?? null, layer: error.data?.layer ?? null };
}
for (const fd of held) closeSync(fd);
process.stdout.write(JSON.stringify({ exhausted: code, held: held.length, ...result }) + "\\n");
await runtime.close();
`;

describe("our own process out of file descriptors", () => {
  it("a real openai client call that meets EMFILE is local_resources, naming the fix, and no provider is called", async () => {
    const sim = await startSimulator();
    sims.push(sim);
    const backup = await startSimulator();
    sims.push(backup);
    const dir = tempDir("tenax-emfile-");
    const script = join(dir, "child.mjs");
    writeFileSync(script, CHILD);
    // The fallback model is on another provider: a provider's failure would move to it, ours must not.
    const run = await runAsync("sh", [
      "-c",
      `ulimit -n 160 && exec "${process.execPath}" "${script}" "${ROOT}" "${sim.url}" "${backup.url}"`,
    ]);
    expect(run.stderr).toBe("");
    const out = JSON.parse(run.stdout) as {
      exhausted: string | null;
      classified: {
        reason: string;
        retryable: boolean;
        rotate_credential: boolean;
        fallback: boolean;
        message: string;
      } | null;
    };
    expect(out.exhausted).toBe("EMFILE");
    expect(out.classified).toMatchObject({
      reason: "local_resources",
      retryable: true,
      rotate_credential: false,
      fallback: false,
    });
    expect(out.classified?.message).toBe(
      `Tenax's own process is out of file descriptors (EMFILE) while connecting to ${sim.url}: the provider was not reached and is not at fault; raise its open-file limit (ulimit -n, LimitNOFILE=) and see what holds connections open (ls /proc/PID/fd)`,
    );
    // Nothing reached either provider: the primary was never called, and no fallback was tried.
    expect(sim.requests()).toHaveLength(0);
    expect(backup.requests()).toHaveLength(0);
  }, 30_000);
});
