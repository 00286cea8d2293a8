// `tenax chat` answers approvals inline, from the real built CLI with piped stdin, over a simulator
// on real HTTP: a command the exec policy holds back asks at the prompt; y runs it, n denies it (the
// model reads so), s keeps it allowed for the session, and a line typed ahead during the turn stays
// a message for the next turn instead of answering. `tenax chat -q` has no one at a prompt: denied
// at once, with the reason.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { listApprovals } from "../src/agent/approvals/approval-records.js";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import type { ProfilePaths } from "../src/profile/paths.js";
import { openReader } from "../src/store/registry.js";
import { BIN, cliEnvironment, requireBuild, tenaxAsync } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

let sim: Simulator | undefined;
beforeAll(() => requireBuild());
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function profile(): Promise<{ paths: ProfilePaths; sim: Simulator }> {
  sim = await startSimulator();
  const paths = profileWith(
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\ntools: { exec: { mode: ask } }\n`,
  );
  return { paths, sim };
}

function touching(s: Simulator, file: string, times = 1) {
  const steps = [];
  for (let i = 0; i < times; i++) {
    steps.push({
      type: "tool_calls" as const,
      calls: [{ name: "terminal", arguments: { command: `touch ${file}` } }],
    });
    steps.push({ type: "reply" as const, text: `done ${i + 1}` });
  }
  s.script(steps);
}

/** An interactive chat in `cwd` with its output collected, and a way to wait on it. */
function chat(paths: ProfilePaths, cwd: string) {
  const child = spawn(process.execPath, [BIN, "chat"], { cwd, env: cliEnvironment(paths.home) });
  const out = { stdout: "", stderr: "" };
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    out.stdout += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    out.stderr += c;
  });
  const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
  const until = async (what: () => boolean, label: string) => {
    const deadline = Date.now() + 15_000;
    while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    if (!what())
      throw new Error(`timed out waiting for ${label}; stderr:\n${out.stderr}\nstdout:\n${out.stdout}`);
  };
  const count = (text: string) => out.stderr.split(text).length - 1;
  return { child, out, closed, until, count, say: (line: string) => child.stdin.write(`${line}\n`) };
}

async function approvalsOf(paths: ProfilePaths) {
  const reader = openReader(paths);
  try {
    return await listApprovals(reader);
  } finally {
    reader.close();
  }
}

describe("tenax chat: approvals inline", () => {
  it("asks at the prompt: y runs the command, n denies it, s keeps it allowed for the session", async () => {
    const { paths, sim: s } = await profile();
    const project = tempDir("tenax-project-");
    const file = join(project, "made");
    touching(s, file, 3);
    const c = chat(paths, project);
    c.say("make it");
    await c.until(() => c.count("approve terminal: touch") === 1, "the first question");
    expect(existsSync(file)).toBe(false);
    c.say("maybe");
    await c.until(() => c.out.stderr.includes("answer y, n, s"), "the question again");
    c.say("n");
    await c.until(() => c.out.stdout.includes("done 1"), "the first reply");
    expect(existsSync(file)).toBe(false);
    expect(JSON.stringify(s.requests()[1]?.body)).toContain("denied by tenax chat");
    // Two lines at once: the second is typed ahead, so it waits for its own turn and is no answer.
    c.say("make it again\nonce more");
    await c.until(() => c.count("approve terminal: touch") === 2, "the second question");
    expect(c.count("answer y, n, s")).toBe(1);
    c.say("s");
    await c.until(() => c.out.stdout.includes("done 2"), "the second reply");
    expect(existsSync(file)).toBe(true);
    await c.until(() => c.out.stdout.includes("done 3"), "the third reply, to the line typed ahead");
    // Allowed for the session: no third question.
    expect(c.count("approve terminal: touch")).toBe(2);
    c.say("/exit");
    expect(await c.closed).toBe(0);
    const records = await approvalsOf(paths);
    expect(records.map((r) => [r.status, r.decision])).toEqual([
      ["denied", "deny"],
      ["approved", "session"],
    ]);
    expect(records[1]?.decided_by).toMatch(/^tenax chat, pid \d+/);
  });

  it("-q has no one at a prompt: the command is denied at once and the model reads why", async () => {
    const { paths, sim: s } = await profile();
    const project = tempDir("tenax-project-");
    const file = join(project, "made");
    touching(s, file);
    const run = await tenaxAsync(paths.home, ["chat", "-q", "make it"], { cwd: project });
    expect(run.status).toBe(0);
    expect(existsSync(file)).toBe(false);
    const told = JSON.stringify(s.requests()[1]?.body);
    expect(told).toContain("denied at once");
    expect(told).toContain("tools.exec.allow");
    expect((await approvalsOf(paths)).map((r) => r.status)).toEqual(["denied"]);
  });
});
