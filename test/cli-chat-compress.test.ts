// `/compress` in `tenax chat` (the real built CLI, piped) says what it did, in every case: nothing to
// compress and why, compressed with its figures and the summarizer's model, or failed with the
// reason; never a pointer to status lines that are not there. The summarizer is the simulator.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { requireBuild, tenaxAsync } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";

let sim: Simulator | undefined;
beforeAll(() => requireBuild());
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function home() {
  sim = await startSimulator();
  const paths = profileWith(
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\nretry: { max_attempts: 1 }\n`,
  );
  return { dir: paths.home, sim };
}

const chat = (dir: string, input: string) => tenaxAsync(dir, ["chat"], { input });

/** Three exchanges, so there is a middle (the second) between the first and the recent one. */
const long = (n: number) => `question ${n}: ${"a long paragraph of context ".repeat(40)}`;
const THREE_TURNS = `${long(1)}\n${long(2)}\n${long(3)}\n`;
const REPLIES = [1, 2, 3].map((n) => ({ type: "reply" as const, text: `answer ${n}` }));

describe("/compress", () => {
  it("on a session with nothing to compress says so and why", async () => {
    const { dir } = await home();
    const run = await chat(dir, "/compress\n/exit\n");
    expect(run.status).toBe(0);
    expect(run.stderr).toContain(
      "nothing was compressed: nothing to compress; the conversation is only its first exchange and the recent turns",
    );
    expect(run.stderr + run.stdout).not.toContain("status lines above");
  });

  it("after three exchanges compresses the middle and gives the figures and the summarizer", async () => {
    const { dir, sim: s } = await home();
    s.script([...REPLIES, { type: "reply", text: "They asked three long questions." }]);
    const run = await chat(dir, `${THREE_TURNS}/compress\n/exit\n`);
    expect(run.status).toBe(0);
    expect(s.requests()).toHaveLength(4);
    expect(run.stderr).toMatch(
      /compressed 2 messages \(seq \d+–\d+\) into a summary of \d+ tokens \((\d+) → (\d+) tokens\); the originals stay in the transcript \(summary by sim\/echo\)/,
    );
    const [, before, after] = /\((\d+) → (\d+) tokens\)/.exec(run.stderr) ?? [];
    expect(Number(after)).toBeLessThan(Number(before));
    expect(run.stderr + run.stdout).not.toContain("status lines above");
  });

  it("when the summarizer fails, says it failed, why, and that nothing was compressed", async () => {
    const { dir, sim: s } = await home();
    s.script([
      ...REPLIES,
      {
        type: "error",
        status: 500,
        body: { error: { message: "summarizer exploded", type: "server_error" } },
      },
    ]);
    const run = await chat(dir, `${THREE_TURNS}/compress\n/exit\n`);
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(
      /compression failed: the summarizer failed \(sim\/echo failed \(server_error\): .*summarizer exploded\); it cools down for 60 s/,
    );
    expect(run.stderr).toContain("nothing was compressed; the conversation goes on as it was");
    expect(run.stderr + run.stdout).not.toContain("status lines above");
  });
});
