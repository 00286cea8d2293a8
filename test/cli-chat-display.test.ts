// What `tenax chat` shows while a turn runs, from the real built CLI against a simulator over HTTP:
// a 429 that cools the only key and waits is one line; tool calls show their command and result;
// a provider nothing listens on ends with the layer and the fix. Piped, there is no escape code;
// under a pseudo-terminal (script(1)) the retry's countdown is redrawn in place, in color unless
// NO_COLOR says otherwise.
import { createServer } from "node:net";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/llm/simulator/server.js";
import type { SimStep } from "../src/llm/simulator/steps.js";
import { BIN, cliEnvironment, requireBuild, runAsync, tenaxAsync } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";

let sim: Simulator | undefined;
beforeAll(() => requireBuild());
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function home(extra = "") {
  sim = await startSimulator();
  const paths = profileWith(
    `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "${sim.url}" }\ntools: { exec: { mode: full } }\n${extra}`,
  );
  return { home: paths.home, sim };
}

const RATE_LIMITED: SimStep = {
  type: "error",
  status: 429,
  headers: { "retry-after": "1" },
  body: {
    error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" },
  },
} as const;

const ESC = "\x1b";
/** A color (select graphic rendition) sequence. */
const COLOR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`);
const lines = (text: string) => text.split("\n").filter((l) => l !== "");

/** A port nothing listens on: one the system just gave out and took back. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** The CLI under a pseudo-terminal: what the terminal received (stdout and stderr both). */
function underTerminal(homeDir: string, args: string[], env: Record<string, string> = {}) {
  const environment: NodeJS.ProcessEnv = { ...cliEnvironment(homeDir), TERM: "xterm-256color", ...env };
  if (env.NO_COLOR === undefined) delete environment.NO_COLOR;
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  return runAsync("/usr/bin/script", ["-qfec", `stty cols 200 rows 50; exec ${quoted}`, "/dev/null"], {
    env: environment,
  });
}

describe("tenax chat status, piped", () => {
  it("a 429 that cools the only key and waits is one line that says both; stdout is the reply", async () => {
    const { home: dir, sim: s } = await home();
    s.script([RATE_LIMITED]);
    const run = await tenaxAsync(dir, ["chat", "-q", "hi"]);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("echo: hi\n");
    const shown = lines(run.stderr);
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatch(
      /^\[retry\] rate_limit \(HTTP 429\) from sim\/echo: sim cooling down \(it needs no key\); attempt 2 of 4 in 1\.\ds, turn \d+\.\ds, context ~\d+ tokens$/,
    );
    expect(run.stderr).not.toContain("[credentials]");
    expect(run.stderr + run.stdout).not.toContain(ESC);
    expect(s.requests()).toHaveLength(2);
  });

  it("--json keeps its shape; the status line still goes to stderr", async () => {
    const { home: dir, sim: s } = await home();
    s.script([RATE_LIMITED]);
    const run = await tenaxAsync(dir, ["chat", "-q", "hi", "--json"]);
    expect(run.status).toBe(0);
    const doc = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(Object.keys(doc)).toEqual([
      "session_id",
      "reply",
      "status",
      "partial",
      "finish_reason",
      "turn_id",
      "model",
      "usage",
      "error",
    ]);
    expect(doc.reply).toBe("echo: hi");
    expect(lines(run.stderr)).toHaveLength(1);
  });

  it("interactive: each tool call shows its command, then its result, on lines of their own", async () => {
    const { home: dir, sim: s } = await home();
    s.script([
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "echo hi" } }] },
      { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "echo oops >&2; exit 3" } }] },
      { type: "reply", text: "done" },
    ]);
    const run = await tenaxAsync(dir, ["chat"], { input: "run it\n/exit\n" });
    expect(run.status).toBe(0);
    expect(lines(run.stderr).slice(1)).toEqual([
      "▸ terminal  echo hi",
      "  ✓ 1 line",
      "▸ terminal  echo oops >&2; exit 3",
      "  ✗ exit 3: oops",
    ]);
    expect(run.stdout).toContain("done\n");
    expect(run.stdout).not.toContain("▸");
    expect(run.stderr + run.stdout).not.toContain(ESC);
  });

  it("a provider port nothing listens on: the final error names the layer, the address and the fix; exit 1", async () => {
    const port = await deadPort();
    const dir = profileWith(
      `model: { provider: sim, name: echo }\nproviders:\n  sim: { type: simulator, base_url: "http://127.0.0.1:${port}/v1" }\nretry: { max_attempts: 2 }\n`,
    ).home;
    const run = await tenaxAsync(dir, ["chat", "-q", "hi"]);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe("");
    const shown = lines(run.stderr);
    expect(shown).toEqual([
      expect.stringMatching(
        /^\[retry\] unreachable from sim\/echo: could not connect to .*attempt 2 of 2 in/,
      ),
      expect.stringMatching(/^\[retry\] unreachable from sim\/echo: .*gave up after 2 of 2 attempts/),
      expect.stringMatching(
        new RegExp(
          `^error: turn failed \\(retry layer, unreachable\\): sim/echo: could not connect to http://127\\.0\\.0\\.1:${port}/v1 \\(connection refused\\): is the provider running\\?; gave up after 2 attempts`,
        ),
      ),
      expect.stringMatching(
        /^what to do: .*start the provider's server, or fix providers\.sim\.base_url in config\.yaml/,
      ),
    ]);
    expect(run.stderr).not.toContain("server_error");
  });
});

describe("tenax chat status, on a terminal", () => {
  const script: SimStep[] = [
    RATE_LIMITED,
    { type: "tool_calls", calls: [{ name: "terminal", arguments: { command: "sleep 0.6; echo hi" } }] },
    { type: "reply", text: "done" },
  ];

  it("the retry's wait is a block with a countdown redrawn in place, in color; tools get a spinner", async () => {
    const { home: dir, sim: s } = await home();
    s.script(script);
    const run = await underTerminal(dir, ["chat", "-q", "hi"]);
    expect(run.status, run.stdout).toBe(0);
    const screen = run.stdout;
    expect(screen).toContain("⚠ rate_limit (HTTP 429) from sim/echo");
    // Each redraw goes back up over the 4 lines of the block, to their start, and erases them.
    expect(screen.split(`${ESC}[3A\r${ESC}[0J`).length - 1).toBeGreaterThanOrEqual(3);
    const countdown = [...screen.matchAll(/next attempt in (\d+\.\d)s/g)].map((m) => Number(m[1]));
    expect(countdown.length).toBeGreaterThanOrEqual(4);
    expect(countdown).toEqual([...countdown].sort((a, b) => b - a));
    expect(countdown[0]).toBeGreaterThan(countdown.at(-1) ?? 0);
    // The block collapses into the one line a log gets, once.
    expect(screen.match(/\[retry\] rate_limit/g)).toHaveLength(1);
    expect(screen).not.toContain("[credentials]");
    const spinner = new Set([...screen.matchAll(/terminal · (\d+\.\d)s/g)].map((m) => m[1]));
    expect(spinner.size).toBeGreaterThanOrEqual(2);
    expect(screen).toContain("▸ terminal  sleep 0.6; echo hi");
    expect(screen).toContain("✓ 1 line");
    expect(screen).toContain("done");
    expect(screen).toMatch(COLOR);
  });

  it("NO_COLOR=1: the same redraws, and not one color code", async () => {
    const { home: dir, sim: s } = await home();
    s.script(script);
    const run = await underTerminal(dir, ["chat", "-q", "hi"], { NO_COLOR: "1" });
    expect(run.status, run.stdout).toBe(0);
    const screen = run.stdout;
    expect(screen.split(`${ESC}[3A\r${ESC}[0J`).length - 1).toBeGreaterThanOrEqual(3);
    expect(screen).toMatch(/next attempt in \d\.\ds/);
    expect(screen).not.toMatch(COLOR);
  });
});
