import {
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext } from "../../../test/helpers/tool-context.js";
import { FileRoots } from "./file-roots.js";
import { writeFileTool } from "./write-file.js";

const tool = writeFileTool();

describe("write_file", () => {
  it("creates a file and its missing parent folders, counting bytes not characters", async () => {
    const cwd = tempDir();
    const context = toolContext(cwd);
    const result = await tool.run({ path: "a/b/c.txt", content: "héllo\n" }, context);
    expect(result).toEqual({ path: join(cwd, "a/b/c.txt"), bytes_written: 7, created: true });
    expect(readFileSync(join(cwd, "a/b/c.txt"), "utf8")).toBe("héllo\n");
    // The snapshot is asked for before the change, of the nearest folder that exists.
    expect(context.fileChanges).toEqual([{ dir: cwd, reason: "write_file" }]);
  });

  it("replaces a file atomically, keeping its mode and leaving no temp file", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "run.sh"), "old");
    chmodSync(join(cwd, "run.sh"), 0o750);
    const context = toolContext(cwd);
    const result = await tool.run({ path: "run.sh", content: "new" }, context);
    expect(result).toMatchObject({ bytes_written: 3, created: false });
    expect(readFileSync(join(cwd, "run.sh"), "utf8")).toBe("new");
    expect(statSync(join(cwd, "run.sh")).mode & 0o777).toBe(0o750);
    expect(readdirSync(cwd)).toEqual(["run.sh"]);
    expect(context.fileChanges).toEqual([{ dir: cwd, reason: "write_file" }]);
  });

  it("writes through a symlink to its target", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "target.txt"), "old");
    symlinkSync("target.txt", join(cwd, "link.txt"));
    await tool.run({ path: "link.txt", content: "via link" }, toolContext(cwd));
    expect(readFileSync(join(cwd, "target.txt"), "utf8")).toBe("via link");
    expect(statSync(join(cwd, "link.txt")).isFile()).toBe(true);
  });

  it("writes nothing outside the working folder and asks for no snapshot there; a root lets it", async () => {
    const cwd = tempDir();
    const outside = tempDir();
    const context = toolContext(cwd);
    await expect(tool.run({ path: join(outside, "x.txt"), content: "x" }, context)).rejects.toThrow(
      `write_file: "${join(outside, "x.txt")}" is outside the working folder ${cwd} and tools.files.roots`,
    );
    expect(readdirSync(outside)).toEqual([]);
    expect(context.fileChanges).toEqual([]);
    const rooted = writeFileTool(new FileRoots({ mode: "roots", roots: [outside] }));
    await rooted.run({ path: join(outside, "x.txt"), content: "x" }, context);
    expect(readFileSync(join(outside, "x.txt"), "utf8")).toBe("x");
  });

  it("refuses to write over a folder, naming it", async () => {
    const cwd = tempDir();
    mkdirSync(join(cwd, "dir"));
    await expect(tool.run({ path: "dir", content: "x" }, toolContext(cwd))).rejects.toThrow(
      `write_file: "dir" (${join(cwd, "dir")}) is a folder; give the path of a file inside it`,
    );
  });

  it("says why a write failed", async () => {
    const cwd = tempDir();
    writeFileSync(join(cwd, "file"), "");
    await expect(tool.run({ path: "file/inner.txt", content: "x" }, toolContext(cwd))).rejects.toThrow(
      /write_file: cannot write "file\/inner.txt" .*: a part of the path is a file, not a folder/,
    );
  });

  it("refuses bad arguments by name", async () => {
    const context = toolContext(tempDir());
    await expect(tool.run({ path: "x" }, context)).rejects.toThrow(
      'argument "content": is required (expected string)',
    );
    await expect(tool.run({ path: "", content: "" }, context)).rejects.toThrow(/argument "path": /);
    await expect(tool.run({ path: "x", content: 5 }, context)).rejects.toThrow(
      /argument "content": .*expected string/,
    );
    expect(context.fileChanges).toEqual([]);
  });
});
