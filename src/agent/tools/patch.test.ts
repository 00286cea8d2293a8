import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers/tmp.js";
import { toolContext } from "../../../test/helpers/tool-context.js";
import { patchTool } from "./patch.js";
import { ToolError } from "./types.js";

const tool = patchTool();

function fileWith(content: string): { cwd: string; read: () => string } {
  const cwd = tempDir();
  writeFileSync(join(cwd, "f.ts"), content);
  return { cwd, read: () => readFileSync(join(cwd, "f.ts"), "utf8") };
}

describe("patch", () => {
  it("replaces the one occurrence and asks for a snapshot first", async () => {
    const { cwd, read } = fileWith("const a = 1;\nconst b = 2;\n");
    const context = toolContext(cwd);
    const result = await tool.run({ path: "f.ts", old_string: "b = 2", new_string: "b = 3" }, context);
    expect(result).toMatchObject({ path: join(cwd, "f.ts"), replacements: 1, first_line: 2 });
    expect(read()).toBe("const a = 1;\nconst b = 3;\n");
    expect(context.fileChanges).toEqual([{ dir: cwd, reason: "patch" }]);
  });

  it("puts new_string in literally, $ patterns included", async () => {
    const { cwd, read } = fileWith("price: X\n");
    await tool.run({ path: "f.ts", old_string: "X", new_string: "$& $1 $$" }, toolContext(cwd));
    expect(read()).toBe("price: $& $1 $$\n");
  });

  it("refuses several matches with their count and lines, and changes nothing", async () => {
    const { cwd, read } = fileWith("x = 1\ny = 2\nx = 1\nx = 1\n");
    const context = toolContext(cwd);
    const error = await tool
      .run({ path: "f.ts", old_string: "x = 1", new_string: "x = 9" }, context)
      .catch((e: unknown) => e);
    if (!(error instanceof ToolError)) throw new Error("expected a ToolError");
    expect(error.message).toMatch(
      /old_string was found 3 times in "f.ts" .*\(at lines 1, 3, 4\).*replace_all/,
    );
    expect(error.details).toMatchObject({ matches: 3, lines: [1, 3, 4] });
    expect(read()).toBe("x = 1\ny = 2\nx = 1\nx = 1\n");
    expect(context.fileChanges).toEqual([]);
  });

  it("replaces every occurrence with replace_all", async () => {
    const { cwd, read } = fileWith("x = 1\ny = 2\nx = 1\n");
    const result = await tool.run(
      { path: "f.ts", old_string: "x = 1", new_string: "x = 9", replace_all: true },
      toolContext(cwd),
    );
    expect(result).toMatchObject({ replacements: 2, first_line: 1 });
    expect(read()).toBe("x = 9\ny = 2\nx = 9\n");
  });

  it("refuses text that is not there, saying it was found 0 times", async () => {
    const { cwd, read } = fileWith("a\r\nb\r\n");
    const context = toolContext(cwd);
    await expect(tool.run({ path: "f.ts", old_string: "a\nb", new_string: "c" }, context)).rejects.toThrow(
      /old_string was found 0 times in "f.ts" .*\(the file has CRLF line endings/,
    );
    expect(read()).toBe("a\r\nb\r\n");
    expect(context.fileChanges).toEqual([]);
  });

  it("refuses a missing file, an empty old_string and a change to the same text", async () => {
    const { cwd } = fileWith("a\n");
    const context = toolContext(cwd);
    await expect(tool.run({ path: "g.ts", old_string: "a", new_string: "b" }, context)).rejects.toThrow(
      `patch: cannot read "g.ts" (${join(cwd, "g.ts")}): it does not exist`,
    );
    await expect(tool.run({ path: "f.ts", old_string: "", new_string: "b" }, context)).rejects.toThrow(
      /argument "old_string": /,
    );
    await expect(tool.run({ path: "f.ts", old_string: "a", new_string: "a" }, context)).rejects.toThrow(
      "old_string and new_string are the same",
    );
    await expect(tool.run({ path: "f.ts", old_string: "a" }, context)).rejects.toThrow(
      'argument "new_string": is required',
    );
    await expect(
      tool.run({ path: "f.ts", old_string: "a", new_string: "b", replace_all: "yes" }, context),
    ).rejects.toThrow(/argument "replace_all": .*expected boolean/);
  });
});
