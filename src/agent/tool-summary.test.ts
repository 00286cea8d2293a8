import { describe, expect, it } from "vitest";
import { errorResult, isErrorResult, summarizeToolResult, toolTarget } from "./tool-summary.js";

const json = (v: unknown) => JSON.stringify(v);

describe("summarizeToolResult", () => {
  it("terminal: lines of output, or the exit code and the first line it said", () => {
    const ran = (over: Record<string, unknown>) =>
      summarizeToolResult(
        "terminal",
        json({ exit_code: 0, signal: null, timed_out: false, stdout: "", stderr: "", ...over }),
        false,
      );
    expect(ran({ stdout: "a\nb\nc\n" })).toEqual({ ok: true, text: "3 lines" });
    expect(ran({ stdout: "hi\n" })).toEqual({ ok: true, text: "1 line" });
    expect(ran({})).toEqual({ ok: true, text: "no output" });
    expect(ran({ exit_code: 1, stderr: "\n  ls: nope\nmore\n" })).toEqual({
      ok: false,
      text: "exit 1: ls: nope",
    });
    expect(ran({ exit_code: 2 })).toEqual({ ok: false, text: "exit 2" });
    expect(ran({ exit_code: null, signal: "SIGKILL" })).toEqual({ ok: false, text: "killed by SIGKILL" });
    expect(ran({ timed_out: true, note: "killed after the 5 s timeout" })).toEqual({
      ok: false,
      text: "killed after the 5 s timeout",
    });
    expect(summarizeToolResult("terminal", json({ id: "p_1", pid: 42, background: true }), false).text).toBe(
      "started in the background as p_1 (pid 42)",
    );
    expect(ran({ exit_code: 1, stderr: "x".repeat(500) }).text.length).toBeLessThanOrEqual(100);
  });

  it("file tools: lines read, bytes written, replacements; a thrown tool's error", () => {
    expect(
      summarizeToolResult(
        "read_file",
        json({ total_lines: 40, start_line: 1, end_line: 40, truncated: false }),
        false,
      ).text,
    ).toBe("40 lines");
    expect(
      summarizeToolResult(
        "read_file",
        json({ total_lines: 900, start_line: 1, end_line: 500, truncated: true }),
        false,
      ).text,
    ).toBe("lines 1-500 of 900");
    expect(summarizeToolResult("write_file", json({ bytes_written: 12, created: true }), false).text).toBe(
      "wrote 12 bytes (new file)",
    );
    expect(summarizeToolResult("patch", json({ replacements: 1, first_line: 7 }), false).text).toBe(
      "1 replacement from line 7",
    );
    expect(summarizeToolResult("read_file", json({ error: "read_file: no such file: a.txt" }), true)).toEqual(
      {
        ok: false,
        text: "read_file: no such file: a.txt",
      },
    );
  });
});

describe("toolTarget", () => {
  it("the command or path a call works on, on one line; an unknown tool's plain arguments", () => {
    expect(toolTarget("terminal", json({ command: "ls -la\n  wc -l" }))).toBe("ls -la ⏎ wc -l");
    expect(toolTarget("terminal", json({ command: "sleep 9", background: true }))).toBe(
      "sleep 9  (background)",
    );
    expect(toolTarget("read_file", json({ path: "a.ts", offset: 40 }))).toBe("a.ts from line 40");
    expect(toolTarget("write_file", json({ path: "out.txt", content: "x" }))).toBe("out.txt");
    expect(toolTarget("memory", json({ action: "add", text: "x" }))).toBe("add");
    expect(toolTarget("mcp__files__read", json({ path: "/a", lines: 5, deep: { x: 1 } }))).toBe(
      "path=/a lines=5",
    );
    expect(toolTarget("terminal", "{not json")).toBe("{not json");
  });
});

describe("errorResult", () => {
  it("a failed tool's result is told apart from a tool's own output when read back", () => {
    const failed = errorResult("read_file: no such file: a.txt", { path: "a.txt" });
    expect(JSON.parse(failed)).toEqual({ error: "read_file: no such file: a.txt", path: "a.txt" });
    expect(isErrorResult(failed)).toBe(true);
    expect(isErrorResult(json({ exit_code: 1, stdout: "", stderr: "error: nope" }))).toBe(false);
    expect(isErrorResult("error: plain text")).toBe(false);
  });
});
