import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { RotatingLog } from "./log-file.js";

describe("RotatingLog", () => {
  it("rotates at the size limit and keeps at most `keep` old files, so the logs stay bounded", () => {
    const dir = tempDir();
    const file = join(dir, "logs", "gateway.log");
    const log = new RotatingLog(file, { maxBytes: 1000, keep: 2 });
    for (let i = 0; i < 500; i++) log.write("info", `line ${i} ${"x".repeat(40)}`);
    log.close();
    const names = readdirSync(join(dir, "logs")).sort();
    expect(names).toEqual(["gateway.log", "gateway.log.1", "gateway.log.2"]);
    for (const n of names) expect(statSync(join(dir, "logs", n)).size).toBeLessThanOrEqual(1000);
    // The newest line is in the current file, whole, and the file is valid JSON lines.
    const current = readFileSync(file, "utf8").trim().split("\n");
    expect(JSON.parse(current.at(-1) ?? "{}").message).toContain("line 499");
    const older = readFileSync(`${file}.1`, "utf8").trim().split("\n");
    expect(Number(/line (\d+)/.exec(JSON.parse(older.at(-1) ?? "{}").message)?.[1])).toBe(
      Number(/line (\d+)/.exec(JSON.parse(current[0] ?? "{}").message)?.[1]) - 1,
    );
  });

  it("goes on appending to an existing file across restarts", () => {
    const file = join(tempDir(), "gateway.log");
    const first = new RotatingLog(file, { maxBytes: 10_000, keep: 1 });
    first.write("info", "one");
    first.close();
    const second = new RotatingLog(file, { maxBytes: 10_000, keep: 1 });
    second.write("warn", "two", { n: 2 });
    second.close();
    const lines = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.level, l.message])).toEqual([
      ["info", "one"],
      ["warn", "two"],
    ]);
    expect(lines[1].data).toEqual({ n: 2 });
  });

  it("a log that cannot be written says why and never throws", () => {
    const dir = tempDir();
    const log = new RotatingLog(join(dir, "gateway.log", "nested", "x.log"), { maxBytes: 100, keep: 1 });
    // A regular file where the folder should be.
    new RotatingLog(join(dir, "gateway.log"), { maxBytes: 100, keep: 1 }).write("info", "a file");
    expect(() => log.write("info", "lost")).not.toThrow();
    expect(log.failed).toMatch(/ENOTDIR|EEXIST/);
  });
});
