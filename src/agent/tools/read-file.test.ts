import { mkdirSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext } from "../../../test/helpers/tool-context.js";
import { FileRoots } from "./file-roots.js";
import { READ_MAX_BYTES, readFileTool } from "./read-file.js";

const tool = readFileTool();

function project(files: Record<string, string | Buffer>): string {
  const dir = tempDir();
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
  return dir;
}

const numbered = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join("");

describe("read_file", () => {
  it("reads a whole file relative to the working folder", async () => {
    const cwd = project({ "a.txt": "one\ntwo\n" });
    const result = await tool.run({ path: "a.txt" }, toolContext(cwd));
    expect(result).toEqual({
      path: join(cwd, "a.txt"),
      content: "one\ntwo\n",
      start_line: 1,
      end_line: 2,
      total_lines: 2,
      truncated: false,
    });
  });

  it("reads an absolute path, and a file without a final newline as it is", async () => {
    const cwd = project({ "b.txt": "x\ny" });
    // The file's folder is a root beside the working folder.
    const rooted = readFileTool(new FileRoots({ mode: "roots", roots: [cwd] }));
    const result = await rooted.run({ path: join(cwd, "b.txt") }, toolContext(tempDir()));
    expect(result).toMatchObject({ content: "x\ny", total_lines: 2, truncated: false });
  });

  it("returns a window of lines and says where to go on", async () => {
    const cwd = project({ "n.txt": numbered(10) });
    const result = await tool.run({ path: "n.txt", offset: 3, limit: 4 }, toolContext(cwd));
    expect(result).toMatchObject({
      content: "line 3\nline 4\nline 5\nline 6\n",
      start_line: 3,
      end_line: 6,
      total_lines: 10,
      truncated: true,
      next_offset: 7,
    });
    const last = await tool.run({ path: "n.txt", offset: 9 }, toolContext(cwd));
    expect(last).toMatchObject({ content: "line 9\nline 10\n", truncated: false });
    expect(last).not.toHaveProperty("next_offset");
  });

  it("cuts a window at the byte bound, on a line boundary", async () => {
    const line = "y".repeat(999);
    const cwd = project({ "big.txt": `${line}\n`.repeat(300) });
    const result = (await tool.run({ path: "big.txt" }, toolContext(cwd))) as Record<string, unknown>;
    const lines = Math.floor(READ_MAX_BYTES / 1000);
    expect(result).toMatchObject({
      end_line: lines,
      total_lines: 300,
      truncated: true,
      next_offset: lines + 1,
    });
    expect(result.content).toBe(`${line}\n`.repeat(lines));
    expect(result.note).toContain(`cut at ${READ_MAX_BYTES} bytes`);
  });

  it("cuts a very long line and says so", async () => {
    const cwd = project({ "min.js": `${"z".repeat(10_000)}\nok\n` });
    const result = (await tool.run({ path: "min.js" }, toolContext(cwd))) as Record<string, unknown>;
    expect(result.long_lines_cut).toBe(1);
    expect(result.content).toContain("[... line cut at 4000 of 10000 characters]\nok\n");
  });

  it("reads an empty file", async () => {
    const cwd = project({ "empty.txt": "" });
    await expect(tool.run({ path: "empty.txt" }, toolContext(cwd))).resolves.toMatchObject({
      content: "",
      total_lines: 0,
      truncated: false,
    });
  });

  it("refuses a missing file, naming the absolute path meant", async () => {
    const cwd = tempDir();
    await expect(tool.run({ path: "nope/x.txt" }, toolContext(cwd))).rejects.toThrow(
      `read_file: cannot read "nope/x.txt" (${join(cwd, "nope/x.txt")}): it does not exist`,
    );
  });

  it("refuses a folder, a binary file and a huge file with what to do instead", async () => {
    const cwd = project({ "bin.dat": Buffer.from([0x89, 0x50, 0x00, 0x01, 0x02]) });
    mkdirSync(join(cwd, "sub"));
    writeFileSync(join(cwd, "huge.log"), "");
    truncateSync(join(cwd, "huge.log"), 11 * 1024 * 1024);
    const context = toolContext(cwd);
    await expect(tool.run({ path: "sub" }, context)).rejects.toThrow(/is a folder, not a file/);
    await expect(tool.run({ path: "bin.dat" }, context)).rejects.toThrow(/looks binary .*reads text only/);
    await expect(tool.run({ path: "huge.log" }, context)).rejects.toThrow(
      /is 11\.0 MB, more than the 10\.0 MB this tool handles; use terminal with head, tail/,
    );
  });

  it("refuses an offset past the end, saying how many lines there are", async () => {
    const cwd = project({ "n.txt": numbered(5) });
    await expect(tool.run({ path: "n.txt", offset: 9 }, toolContext(cwd))).rejects.toThrow(
      /argument "offset" is 9, past the end of "n.txt" .* which has 5 lines/,
    );
  });

  it("refuses bad arguments by name", async () => {
    const context = toolContext(tempDir());
    await expect(tool.run({}, context)).rejects.toThrow('argument "path": is required (expected string)');
    await expect(tool.run({ path: "a", offset: 0 }, context)).rejects.toThrow(/argument "offset": .*>=1/);
    await expect(tool.run({ path: "a", limit: "ten" }, context)).rejects.toThrow(
      /argument "limit": .*expected number/,
    );
    await expect(tool.run({ path: "a", lines: 3 }, context)).rejects.toThrow('Unrecognized key: "lines"');
  });
});
