// `tenax chat` in a real terminal (tmux), from the built CLI, with the in-process simulator scripted
// to ask for a dangerous command: while the approval waits for its answer, nothing is redrawn over
// the line being typed (no spinner, no status line), the answer stays on the screen after Enter,
// and the spinner comes back for the rest of the turn.
import { beforeAll, describe, expect, it } from "vitest";
import { BIN, cliEnvironment, requireBuild } from "./helpers/cli.js";
import { profileWith } from "./helpers/temp-home.js";
import { Terminal } from "./helpers/terminal.js";
import { tempDir } from "./helpers/tmp.js";

beforeAll(() => requireBuild());

const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;

const lastRow = (screen: string[]) => screen.filter((row) => row !== "").at(-1) ?? "";

describe("tenax chat in a terminal: an approval's answer", () => {
  it("stays visible while it is typed and after Enter; no spinner draws over it", async () => {
    const paths = profileWith(
      [
        "model: { provider: sim, name: echo }",
        "providers:",
        "  sim:",
        "    type: simulator",
        "    script:",
        '      - { type: tool_calls, calls: [{ name: terminal, arguments: { command: "rm -rf ~" } }] }',
        '      - { type: reply, text: "left it alone" }',
        "tools: { exec: { mode: ask } }",
        "",
      ].join("\n"),
    );
    const terminal = new Terminal([process.execPath, BIN, "chat"], {
      cwd: tempDir("tenax-project-"),
      env: cliEnvironment(paths.home),
    });
    await terminal.until((s) => s.some((row) => row === ">"), "the chat's prompt");
    terminal.keys("clean up");
    terminal.keys("Enter", false);
    await terminal.until((s) => s.join("\n").includes("approve terminal: rm -rf ~?"), "the question");
    terminal.keys("no");
    // Long enough for a spinner (a frame every 100 ms) to have redrawn its line several times.
    const typed = Date.now();
    while (Date.now() - typed < 1_000) {
      const screen = terminal.screen();
      expect(lastRow(screen), screen.join("\n")).toMatch(/(^|: )no$/);
      expect(screen.join("\n"), screen.join("\n")).not.toMatch(SPINNER);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    terminal.keys("Enter", false);
    const after = await terminal.until((s) => s.join("\n").includes("left it alone"), "the end of the turn");
    const text = after.join("\n");
    expect(text).toMatch(/approval \S+ denied by tenax chat/);
    // The answer is still where it was typed, under its question.
    const question = after.findIndex((row) => row.includes("approve terminal: rm -rf ~?"));
    const answer = after.findIndex((row, i) => i > question && /(^|: )no$/.test(row));
    expect(answer, text).toBeGreaterThan(question);
    expect(after.slice(answer + 1).join("\n")).toContain("denied");
  }, 30_000);
});
