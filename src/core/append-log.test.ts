import { readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, requireBuild, runAsync } from "../../test/helpers/cli.js";
import { tempDir } from "../../test/helpers/tmp.js";
import { AppendLog, LOCK_STALE_MS } from "./append-log.js";
import { Redactor } from "./redact.js";

/** Every line of the file and its rotated ones, parsed (a line that is not JSON fails the test). */
function allLines(dir: string, name: string): Array<Record<string, unknown>> {
  return readdirSync(dir)
    .filter((n) => n === name || n.startsWith(`${name}.`))
    .filter((n) => !n.endsWith(".lock"))
    .flatMap((n) =>
      readFileSync(join(dir, n), "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    );
}

describe("AppendLog", () => {
  it("rotates at the size limit, keeps at most `keep` old files, and every line stays whole", () => {
    const dir = tempDir();
    const file = join(dir, "logs", "events.jsonl");
    const log = new AppendLog(file, { maxBytes: 1000, keep: 2 });
    for (let i = 0; i < 300; i++) expect(log.append({ i, pad: "x".repeat(40) })).toBe(true);
    const names = readdirSync(join(dir, "logs")).sort();
    expect(names).toEqual(["events.jsonl", "events.jsonl.1", "events.jsonl.2"]);
    for (const n of names) expect(statSync(join(dir, "logs", n)).size).toBeLessThanOrEqual(1000);
    // The newest lines, in order and with no gap, across the files kept.
    const kept = [
      ...readFileSync(`${file}.2`, "utf8").trim().split("\n"),
      ...readFileSync(`${file}.1`, "utf8").trim().split("\n"),
      ...readFileSync(file, "utf8").trim().split("\n"),
    ].map((l) => (JSON.parse(l) as { i: number }).i);
    expect(kept.at(-1)).toBe(299);
    expect(kept).toEqual(kept.map((_, k) => (kept[0] as number) + k));
    // No lock is left behind.
    expect(names.some((n) => n.endsWith(".lock"))).toBe(false);
  });

  it("leaves the rotation to the process holding the lock, and takes over a dead one's", () => {
    const dir = tempDir();
    const file = join(dir, "events.jsonl");
    let now = 1_000_000;
    const log = new AppendLog(file, { maxBytes: 200, keep: 1, now: () => now });
    writeFileSync(`${file}.lock`, "");
    utimesSync(`${file}.lock`, now / 1000, now / 1000);
    for (let i = 0; i < 10; i++) log.append({ i, pad: "y".repeat(40) });
    // Another process rotates: this one appends on past the limit meanwhile, losing nothing.
    expect(readdirSync(dir).sort()).toEqual(["events.jsonl", "events.jsonl.lock"]);
    expect(allLines(dir, "events.jsonl")).toHaveLength(10);
    // That process died mid-rotation: once its lock is stale, the next append rotates.
    now += LOCK_STALE_MS + 1000;
    log.append({ i: 10 });
    expect(readdirSync(dir).sort()).toEqual(["events.jsonl", "events.jsonl.1"]);
    expect(allLines(dir, "events.jsonl")).toHaveLength(11);
  });

  it("keeps every line whole and none lost when two processes append and rotate at once", async () => {
    requireBuild();
    const dir = tempDir();
    const file = join(dir, "events.jsonl");
    const script = join(dir, "writer.mjs");
    // Each writer appends 400 lines of ~300 bytes as fast as it can; the file rotates every ~20
    // lines, so both writers rotate it, and append while the other rotates, many times.
    writeFileSync(
      script,
      `import { AppendLog } from ${JSON.stringify(join(ROOT, "dist", "core", "append-log.js"))};
const [file, who] = process.argv.slice(2);
const log = new AppendLog(file, { maxBytes: 6000, keep: 1000 });
for (let i = 0; i < 400; i++) if (!log.append({ who, i, pad: who.repeat(250) })) process.exit(3);
`,
    );
    const runs = await Promise.all(
      ["a", "b"].map((who) => runAsync(process.execPath, [script, file, who], { cwd: dir })),
    );
    expect(runs.map((r) => [r.status, r.stderr])).toEqual([
      [0, ""],
      [0, ""],
    ]);
    const lines = allLines(dir, "events.jsonl");
    for (const who of ["a", "b"]) {
      const mine = lines.filter((l) => l.who === who);
      // Every line of each writer is there once, and whole (a line cut by another's bytes would not parse).
      expect(mine.map((l) => l.i).sort((x, y) => Number(x) - Number(y))).toEqual([...Array(400).keys()]);
      expect(mine.every((l) => l.pad === who.repeat(250))).toBe(true);
    }
    expect(readdirSync(dir).filter((n) => n.startsWith("events.jsonl.")).length).toBeGreaterThan(10);
  });

  it("redacts the profile's secrets by value, as they are and as JSON escapes them", () => {
    const file = join(tempDir(), "events.jsonl");
    const redactor = new Redactor([
      { name: "providers.main.api_keys[0]", value: "sk-live-abcdef123456" },
      { name: "TOKEN", value: 'tok"en\\with-quote' },
    ]);
    const log = new AppendLog(file, { maxBytes: 10_000, keep: 1, redactor });
    log.append({
      message: "failed with key sk-live-abcdef123456",
      data: { header: 'Bearer tok"en\\with-quote' },
    });
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain("sk-live-abcdef123456");
    expect(text).not.toContain("with-quote");
    const line = JSON.parse(text) as { message: string; data: { header: string } };
    expect(line.message).toBe("failed with key [redacted:providers.main.api_keys[0]]");
    expect(line.data.header).toBe("Bearer [redacted:TOKEN]");
  });

  it("never throws when the file cannot be written, says so once, and again after it recovered", () => {
    const dir = tempDir();
    const logs = join(dir, "logs");
    const told: string[] = [];
    const log = new AppendLog(join(logs, "events.jsonl"), {
      maxBytes: 10_000,
      keep: 1,
      onFailure: (m) => told.push(m),
    });
    // A file where the folder should be: no one, root included, can write under it.
    writeFileSync(logs, "");
    expect(log.append({ n: 1 })).toBe(false);
    expect(log.append({ n: 2 })).toBe(false);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/events\.jsonl: .*(ENOTDIR|EEXIST)/);
    expect(log.failed).toMatch(/ENOTDIR|EEXIST/);
    rmSync(logs);
    expect(log.append({ n: 3 })).toBe(true);
    expect(log.failed).toBeNull();
    rmSync(logs, { recursive: true });
    writeFileSync(logs, "");
    expect(log.append({ n: 4 })).toBe(false);
    expect(told).toHaveLength(2);
  });
});
