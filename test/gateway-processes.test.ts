// Processes a turn started do not outlive the Tenax process that ran it: a gateway killed with
// SIGKILL leaves a background sleep, a sleep that cleared its environment and a setsid'd one, and
// the next gateway ends all three before it serves, saying so; a `tenax chat` running a command
// beside the gateway keeps it (its owner lives), and once that chat is killed, the next chat ends it.
// That net is for commands run on the machine (tools.exec.sandbox none); in the bubblewrap sandbox
// they die with the killed gateway at once, and the next one has nothing to reap.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { whichBwrap } from "../src/agent/sandbox/sandbox.js";
import { BIN, cliEnvironment, ROOT, requireBuild, tenaxAsync, testGatewayKey } from "./helpers/cli.js";
import { type GatewayProcess, simProfile, startGateway, until } from "./helpers/gateway.js";
import { markOf, processesOf, running, theProcess, watch } from "./helpers/procs.js";

beforeAll(() => requireBuild());

/** A profile on a simulator whose gateway needs a key, given both ways a gateway may read it. */
async function keyedProfile(sandbox = "none") {
  const made = await simProfile(
    `api_key: "\${TENAX_API_KEY}"`,
    `tools: { exec: { mode: full, sandbox: ${sandbox} } }`,
  );
  // The key every tenax child of this home gets; in .env too, as a first start would write it.
  const key = testGatewayKey(made.home);
  writeFileSync(made.paths.env, `TENAX_API_KEY=${key}\n`, { mode: 0o600 });
  return { ...made, key, profile: markOf(made.paths.dir) };
}

/** Send a message without waiting for the reply (the gateway is killed before it comes). */
function send(url: string, key: string, text: string): void {
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: "tenax", messages: [{ role: "user", content: text }] }),
  }).catch(() => {});
}

async function kill9(gateway: GatewayProcess | ChildProcess): Promise<void> {
  const child = "child" in gateway ? gateway.child : gateway;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const closed = new Promise((resolve) => child.once("close", resolve));
  child.kill("SIGKILL");
  await closed;
}

describe("processes left by a Tenax process that died", () => {
  it("are ended by the next gateway, which says what it reaped", async () => {
    const { sim, paths, home, key, profile } = await keyedProfile();
    watch(["sleep", "300"], profile);
    watch(["sleep", "302"], profile);
    // No environment at all: only the record of the shell it replaced names it.
    watch(["sleep", "301.7"]);
    sim.script([
      {
        type: "tool_calls",
        calls: [
          { name: "terminal", arguments: { command: "sleep 300", background: true } },
          { name: "terminal", arguments: { command: "exec env -i sleep 301.7", background: true } },
          { name: "terminal", arguments: { command: "setsid sleep 302 &" } },
        ],
      },
      { type: "hang", phase: "before_headers" },
      { type: "reply", text: "resumed and done" },
    ]);
    const first = await startGateway(home);
    send(first.url, key, "start the sleepers");
    await until(() => sim.requests().length === 2, 20_000);
    const sleepers = [
      theProcess(["sleep", "300"], profile),
      theProcess(["sleep", "301.7"]),
      theProcess(["sleep", "302"], profile),
    ];
    await kill9(first);
    // Reparented, they outlive the gateway.
    expect(sleepers.map(running)).toEqual([true, true, true]);

    const second = await startGateway(home);
    await until(() => sleepers.every((s) => !running(s)), 5_000);
    const said = `${second.stdout()}${second.stderr()}`;
    const log = readFileSync(join(paths.logs, "gateway.log"), "utf8");
    for (const text of [said, log]) {
      // Each sleeper by its pid, and each recorded command by its text (the shell may have run
      // `sleep 300` as its child, found by its mark, or replaced itself with it).
      for (const s of sleepers) expect(text).toMatch(new RegExp(`reaped process ${s.pid} \\(`));
      for (const command of ["sleep 300", "exec env -i sleep 301.7"])
        expect(text).toMatch(new RegExp(`reaped process \\d+ \\(\\\\?"${command}\\\\?", task t_`));
      expect(text).toMatch(
        new RegExp(
          `reaped process ${sleepers[2]?.pid} \\(started by a command of task t_\\w+, found by its mark\\)`,
        ),
      );
    }
    expect(said).toMatch(new RegExp(`Tenax process ${first.child.pid}:\\d+, which ran it, is gone`));
    await kill9(second);
  });

  it("are left alone while their owner, a tenax chat beside the gateway, runs; the next chat ends them once it is killed", async () => {
    const { sim, home, profile } = await keyedProfile();
    watch(["sleep", "303"], profile);
    sim.script([
      {
        type: "tool_calls",
        calls: [{ name: "terminal", arguments: { command: "sleep 303", timeout: 300 } }],
      },
      { type: "reply", text: "hello from the second chat" },
    ]);
    const chat = spawn(process.execPath, [BIN, "chat", "-q", "run the long command"], {
      cwd: ROOT,
      env: cliEnvironment(home),
      stdio: "ignore",
    });
    try {
      await until(() => processesOf(["sleep", "303"], profile).length === 1, 20_000);
      const sleeper = theProcess(["sleep", "303"], profile);

      const gateway = await startGateway(home);
      // The gateway reaped before it listened: the chat's command still runs, nothing was reaped.
      expect(running(sleeper)).toBe(true);
      expect(`${gateway.stdout()}${gateway.stderr()}`).not.toMatch(/reaped process/);
      await kill9(gateway);
      expect(running(sleeper)).toBe(true);

      await kill9(chat);
      expect(running(sleeper)).toBe(true);
      const next = await tenaxAsync(home, ["chat", "-q", "hi"]);
      expect(next.status).toBe(0);
      expect(next.stderr).toMatch(
        new RegExp(`reaped process ${sleeper.pid} \\(.*\\): Tenax process ${chat.pid}:`),
      );
      expect(next.stderr).toMatch(/reaped process \d+ \("sleep 303", task t_\w+\)/);
      expect(running(sleeper)).toBe(false);
    } finally {
      await kill9(chat);
    }
  });

  it.skipIf(whichBwrap(process.env.PATH) === null)(
    "in the bubblewrap sandbox, die with the killed gateway at once: the next one has nothing to reap",
    async () => {
      const { sim, home, key, profile } = await keyedProfile("bwrap");
      watch(["sleep", "300"], profile);
      watch(["sleep", "302"], profile);
      watch(["sleep", "301.7"]);
      sim.script([
        {
          type: "tool_calls",
          calls: [
            { name: "terminal", arguments: { command: "sleep 300", background: true } },
            { name: "terminal", arguments: { command: "exec env -i sleep 301.7", background: true } },
            { name: "terminal", arguments: { command: "setsid sleep 302 &" } },
          ],
        },
        { type: "hang", phase: "before_headers" },
        { type: "reply", text: "resumed and done" },
      ]);
      const first = await startGateway(home);
      send(first.url, key, "start the sleepers");
      await until(() => sim.requests().length === 2, 20_000);
      const sleepers = [
        theProcess(["sleep", "300"], profile),
        theProcess(["sleep", "301.7"]),
        theProcess(["sleep", "302"], profile),
      ];
      expect(sleepers.map(running)).toEqual([true, true, true]);
      await kill9(first);
      await until(() => sleepers.every((s) => !running(s)), 5_000);
      const second = await startGateway(home);
      expect(`${second.stdout()}${second.stderr()}`).not.toMatch(/reaped process/);
      await kill9(second);
    },
  );
});
