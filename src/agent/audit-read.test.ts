import { appendFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers/tmp.js";
import { readTrail, TrailTail } from "./audit-read.js";

const line = (time: string, type = "retry", extra = "") =>
  `{"time":"${time}","layer":"retry","type":"${type}","session_id":null,"message":"m"${extra}}\n`;

describe("reading the audit trail", () => {
  it("merges the rotated files and the current one in time order, skipping and counting damaged lines", () => {
    const dir = tempDir();
    const file = join(dir, "events.jsonl");
    writeFileSync(`${file}.2`, line("2026-12-05T01:00:00.000Z", "a"));
    // A process died mid-write: half a line, then the next process's whole line after it.
    writeFileSync(
      `${file}.1`,
      `${line("2026-12-05T02:00:00.000Z", "b")}{"time":"2026-12-05T02:00:01.000Z","layer":"re\n${line("2026-12-05T02:30:00.000Z", "c")}`,
    );
    // A line written during a rotation may end .1 later than the first line of the new file.
    appendFileSync(`${file}.1`, line("2026-12-05T03:00:02.000Z", "e"));
    writeFileSync(file, `${line("2026-12-05T03:00:01.000Z", "d")}not json at all\n{"time":"no"}\n`);
    const trail = readTrail(file);
    expect(trail.records.map((r) => r.type)).toEqual(["a", "b", "c", "d", "e"]);
    expect(trail.damaged).toBe(3);
    expect(trail.files).toEqual([`${file}.2`, `${file}.1`, file]);
    expect(readTrail(join(dir, "none.jsonl"))).toEqual({ records: [], damaged: 0, files: [] });
  });

  it("follows the current file across a rotation without losing or repeating a line", () => {
    const dir = tempDir();
    const file = join(dir, "events.jsonl");
    const tail = new TrailTail(file);
    expect(tail.poll()).toEqual([]); // no file yet
    writeFileSync(file, line("2026-12-05T01:00:00.000Z", "a"));
    expect(tail.poll().map((r) => r.type)).toEqual(["a"]);
    // Half a line is held until its end is there.
    appendFileSync(file, line("2026-12-05T01:00:01.000Z", "b").slice(0, 20));
    expect(tail.poll()).toEqual([]);
    appendFileSync(file, line("2026-12-05T01:00:01.000Z", "b").slice(20));
    // Then another process rotates, after one more line in the old file.
    appendFileSync(file, line("2026-12-05T01:00:02.000Z", "c"));
    renameSync(file, `${file}.1`);
    writeFileSync(file, line("2026-12-05T01:00:03.000Z", "d"));
    expect(tail.poll().map((r) => r.type)).toEqual(["b", "c", "d"]);
    appendFileSync(file, line("2026-12-05T01:00:04.000Z", "e"));
    expect(tail.poll().map((r) => r.type)).toEqual(["e"]);
    expect(tail.damaged).toBe(0);
    tail.close();
  });
});
