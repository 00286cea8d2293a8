// `tenax chat` as users run it: one-shot with --json, continuing a session, and the interactive
// slash commands through stdin, against a simulator whose requests show what the model was sent.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import { BIN, cliEnvironment, ROOT, requireBuild, tenaxAsync } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";
import { tempDir } from "./helpers/tmp.js";

let sim: Simulator | undefined;
/** Interactive chats a failed test left at their prompt: ended so none outlives the test. */
const chats = new Set<ChildProcess>();
beforeAll(() => requireBuild());
afterEach(async () => {
  for (const child of chats) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  chats.clear();
  await sim?.close();
  sim = undefined;
});

async function home() {
  sim = await startSimulator();
  const paths = profileWith(
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\n`,
  );
  return paths.home;
}

const tenax = (home: string, args: string[], input = "", cwd?: string) =>
  tenaxAsync(home, args, { input, ...(cwd ? { cwd } : {}) });
const chatWithInput = (homeDir: string, input: string) => tenax(homeDir, ["chat"], input);

function sentMessages(s: Simulator, index: number): string {
  const body = s.requests()[index]?.body as { messages: unknown[] } | undefined;
  return JSON.stringify(body?.messages ?? null);
}

/** `tenax chat` at a prompt on pipes, with what it printed so far and how it ended. */
function interactiveChat(dir: string) {
  const child = spawn(process.execPath, [BIN, "chat"], { cwd: ROOT, env: cliEnvironment(dir) });
  chats.add(child);
  const seen = { stdout: "", stderr: "" };
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    seen.stderr += c;
  });
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    seen.stdout += c;
  });
  // With the signal too: a process killed by one (code null) says which.
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal })),
  );
  return { child, seen, closed };
}

async function until(what: () => boolean) {
  const deadline = Date.now() + 10_000;
  while (!what() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  expect(what()).toBe(true);
}

describe("tenax chat", () => {
  it("-q --json runs one turn and prints session_id and reply; --session continues it", async () => {
    const dir = await home();
    const first = await tenax(dir, ["chat", "-q", "the word is pineapple", "--json"]);
    expect(first.status).toBe(0);
    const doc = JSON.parse(first.stdout);
    expect(doc).toMatchObject({ reply: "echo: the word is pineapple", status: "completed", partial: false });
    expect(doc.session_id).toMatch(/^s_/);
    const second = await tenax(dir, [
      "chat",
      "-q",
      "what was the word?",
      "--session",
      doc.session_id,
      "--json",
    ]);
    expect(JSON.parse(second.stdout).session_id).toBe(doc.session_id);
    expect(sentMessages(sim as Simulator, 1)).toContain("pineapple");
    const shown = await tenax(dir, ["sessions", "show", doc.session_id]);
    expect(shown.stdout).toContain("what was the word?");
  });

  it("the built-in simulator says so on start", async () => {
    const dir = profileWith().home;
    const run = await tenax(dir, ["chat", "-q", "hi"]);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("echo: hi\n");
    expect(run.stderr).toMatch(/built-in local simulator answers/);
  });

  it("/new after a session carries nothing of it over", async () => {
    const dir = await home();
    const run = await chatWithInput(
      dir,
      "the word is pineapple\n/new\n/context\nwhat was the word?\n/exit\n",
    );
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/new session s_/);
    expect(run.stderr).toMatch(/: 0 stored messages/);
    const s = sim as Simulator;
    expect(s.requests()).toHaveLength(2);
    expect(sentMessages(s, 0)).toContain("pineapple");
    expect(sentMessages(s, 1)).not.toContain("pineapple");
  });

  it("/context and /usage change nothing; /branch copies; /retry sends the last message again", async () => {
    const dir = await home();
    const run = await chatWithInput(
      dir,
      "first question\n/context\n/usage\n/context\n/branch\n/retry\n/usage\n/exit\n",
    );
    expect(run.status).toBe(0);
    const contexts = run.stderr.match(/: \d+ stored messages/g) ?? [];
    expect(contexts).toEqual([": 2 stored messages", ": 2 stored messages"]);
    expect(run.stderr).toMatch(/branched s_\S+ into s_\S+ \(2 messages copied\)/);
    const s = sim as Simulator;
    expect(s.requests()).toHaveLength(2);
    // The retry in the branch carries the copied history and the question again.
    expect(sentMessages(s, 1).match(/first question/g)).toHaveLength(3);
    expect(run.stderr).toMatch(/1 turns reported \d+ input and \d+ output tokens/);
  });

  it("an unknown slash command says so and the chat goes on", async () => {
    const dir = await home();
    const run = await chatWithInput(
      dir,
      "/frobnicate\n/help\n/model nope/x\n/model sim/echo\n/model\nhi\n/exit\n",
    );
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/unknown command \/frobnicate; \/help lists the commands/);
    expect(run.stderr).toMatch(/\/rollback \[N\]/);
    expect(run.stderr).toMatch(
      /\/model takes PROVIDER\/NAME with a configured provider \(sim\), or "primary"; not "nope\/x"/,
    );
    expect(run.stderr).toMatch(/this chat starts on: sim\/echo/);
    expect(run.stdout).toContain("echo: hi");
  });

  it("--checkpoints snapshots before the agent writes, and /rollback brings the old content back", async () => {
    const dir = await home();
    const project = tempDir("tenax-chat-project-");
    writeFileSync(join(project, "app.txt"), "version 1\n");
    (sim as Simulator).script([
      {
        type: "tool_calls",
        calls: [{ name: "write_file", arguments: { path: "app.txt", content: "version 2\n" } }],
      },
      { type: "reply", text: "done" },
    ]);
    const run = await tenax(dir, ["chat", "--checkpoints"], "update app.txt\n/rollback\n/exit\n", project);
    expect(run.status).toBe(0);
    expect(run.stderr).toMatch(/\[checkpoints\] checkpoint \w+ of \S+ \(1 file/);
    expect(run.stderr).toMatch(/restored .* to checkpoint \w+ .*; 1 files changed; undo with \/rollback 1/);
    expect(readFileSync(join(project, "app.txt"), "utf8")).toBe("version 1\n");
  });

  it("Ctrl-C interrupts a running turn and the chat goes on; Ctrl-C twice leaves", async () => {
    const dir = await home();
    const s = sim as Simulator;
    s.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const { child, seen, closed } = interactiveChat(dir);
    child.stdin.write("tell me a long story\n");
    await until(() => s.requests().length === 1 && seen.stdout.includes("echo"));
    child.kill("SIGINT");
    await until(() => seen.stderr.includes("(interrupted)"));
    await s.idle();
    expect(s.requests()[0]?.ended).toBe("client_closed");
    // Still there: the next message is a new turn.
    child.stdin.write("are you there?\n");
    // The interrupted question got no answer, and the model is told so before the next one.
    await until(() => seen.stdout.includes("echo: are you there?"));
    const sent = JSON.stringify((s.requests()[1]?.body as { messages?: unknown } | null)?.messages);
    expect(sent).toContain("this turn was interrupted before a reply");
    expect(s.requests()[1]?.ended).toBe("completed");
    const answered = seen.stderr.length;
    child.kill("SIGINT");
    await new Promise((r) => setTimeout(r, 100));
    child.kill("SIGINT");
    expect({ ...(await closed), stderr: seen.stderr.slice(-400) }).toEqual({
      code: 0,
      signal: null,
      stderr: expect.any(String),
    });
    // The first of the two was a first press, whether the turn was still ending or over: never
    // the second of the one that interrupted the turn before this message.
    expect(seen.stderr.slice(answered)).toMatch(
      /\(interrupting; Ctrl-C again to leave\)|\(Ctrl-C again to leave, or \/exit\)/,
    );
  });

  it("after an interrupted turn and the next answer, one Ctrl-C at the prompt says how to leave and the chat goes on", async () => {
    const dir = await home();
    const s = sim as Simulator;
    s.script([{ type: "hang", phase: "mid_stream", after_chunks: 2 }]);
    const { child, seen, closed } = interactiveChat(dir);
    child.stdin.write("tell me a long story\n");
    await until(() => s.requests().length === 1 && seen.stdout.includes("echo"));
    child.kill("SIGINT");
    await until(() => seen.stderr.includes("(interrupted)"));
    child.stdin.write("are you there?\n");
    // The answer and the prompt after it: the turn is over, well within 2 s of the Ctrl-C above.
    await until(() => seen.stdout.endsWith("echo: are you there?\n> "));
    child.kill("SIGINT");
    await until(() => seen.stderr.includes("(Ctrl-C again to leave, or /exit)"));
    child.stdin.write("still here?\n");
    await until(() => seen.stdout.includes("echo: still here?"));
    child.stdin.end("/exit\n");
    expect({ ...(await closed), stderr: seen.stderr.slice(-400) }).toEqual({
      code: 0,
      signal: null,
      stderr: expect.any(String),
    });
  });
});
