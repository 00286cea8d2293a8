// `tenax drill` says what it is doing while it runs, from the built CLI: each row's start as it
// starts and its result as it ends, on stderr, so that --json keeps stdout one JSON document; on a
// terminal the running row is a live line with its time so far, which the result replaces.
import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { BIN, cliEnvironment, requireBuild } from "./helpers/cli.js";
import { tempHome } from "./helpers/temp-home.js";
import { Terminal } from "./helpers/terminal.js";

beforeAll(() => requireBuild());

const ROW = "search index damaged under a running gateway";

/** Each line of a stream with the time it arrived. */
function timedLines(stream: NodeJS.ReadableStream, into: Array<{ at: number; line: string }>) {
  let partial = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    const at = Date.now();
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) into.push({ at, line });
  });
}

describe("tenax drill: progress", () => {
  it("--json: each row's start and result on stderr as they happen; stdout stays one JSON document", async () => {
    const home = tempHome();
    const child = spawn(process.execPath, [BIN, "drill", "--json", "--only", "search index"], {
      env: cliEnvironment(home),
    });
    const err: Array<{ at: number; line: string }> = [];
    timedLines(child.stderr, err);
    let stdout = "";
    let firstOut: number | null = null;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      firstOut ??= Date.now();
      stdout += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    const text = err.map((e) => e.line).join("\n");
    expect(code, text).toBe(0);
    const report = JSON.parse(stdout) as { ok: boolean; rows: Array<{ fault: string; result: string }> };
    expect(report.rows.map((r) => [r.fault, r.result])).toEqual([[ROW, "pass"]]);
    const start = err.find(
      (e) => e.line === `[1/1] ${ROW}: running (the store layer should catch it; deadline 25 s)`,
    );
    const end = err.find((e) =>
      /^ok {3}\[1\/1\] search index damaged under a running gateway: caught by store in [\d.]+ m?s; the row took \d/.test(
        e.line,
      ),
    );
    expect(start, text).toBeDefined();
    expect(end, text).toBeDefined();
    // The start was told while the row ran, well before its result and the document.
    expect((end?.at ?? 0) - (start?.at ?? 0)).toBeGreaterThanOrEqual(100);
    expect(firstOut ?? 0).toBeGreaterThanOrEqual(end?.at ?? Number.POSITIVE_INFINITY);
    expect(text).not.toContain("\x1b");
  }, 60_000);

  it("on a terminal the running row is a live line with its time, replaced by the result", async () => {
    const home = tempHome();
    const terminal = new Terminal([process.execPath, BIN, "drill", "--only", "search index"], {
      cwd: home,
      env: cliEnvironment(home),
      columns: 160,
    });
    const live = new RegExp(`^. \\[1/1\\] ${ROW} · \\d+\\.\\d s \\(the store layer should catch it\\)$`);
    await terminal.until((screen) => screen.some((row) => live.test(row)), "the live line", 30_000);
    const done = await terminal.until(
      (screen) => screen.some((row) => row.startsWith("[exited ")),
      "the end",
      60_000,
    );
    const text = done.join("\n");
    expect(text).toMatch(/^\[exited 0\]$/m);
    expect(text).toMatch(
      new RegExp(`^ok {3}\\[1/1\\] ${ROW}: caught by store in [\\d.]+ m?s; the row took \\d`, "m"),
    );
    // The live line is gone: only the result stands where it was.
    expect(
      done.some((row) => live.test(row)),
      text,
    ).toBe(false);
    expect(text).toMatch(/fault\s+expected layer\s+caught by\s+time to detect\s+result/);
  }, 90_000);
});
