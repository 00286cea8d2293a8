// patch: one exact replacement in a text file. The old text must match exactly once (or
// replace_all says every match is meant), so an edit never lands somewhere the model did not look.
import { dirname } from "node:path";
import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { FileRoots } from "./file-roots.js";
import { describePath, resolveToolPath } from "./paths.js";
import { readTextFile, writeTextFile } from "./text-file.js";
import { type Tool, ToolError } from "./types.js";

const schema = z.strictObject({
  path: z.string().min(1).describe("The file: relative to the working folder, or absolute."),
  old_string: z.string().min(1).describe("The exact text to replace, whitespace and indentation included."),
  new_string: z.string().describe("The text to put in its place."),
  replace_all: z
    .boolean()
    .optional()
    .describe("Replace every occurrence; without it old_string must occur exactly once."),
});

/** Start offsets of the non-overlapping occurrences of `needle`. */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = [];
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + needle.length)) {
    found.push(at);
  }
  return found;
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) line++;
  return line;
}

export function patchTool(roots = new FileRoots()): Tool {
  return defineTool({
    name: "patch",
    description:
      "Replace old_string with new_string in a file. old_string must match the file exactly (whitespace " +
      "included) and exactly once, unless replace_all is true; add surrounding lines to make it unique." +
      roots.reach,
    schema,
    readOnly: false,
    run: async (args, context) => {
      const path = resolveToolPath(context.cwd, args.path);
      const where = describePath(path);
      await (await roots.scope(context.cwd)).judge("patch", path);
      if (args.old_string === args.new_string) {
        throw new ToolError("patch: old_string and new_string are the same; there is nothing to change", {
          path: path.absolute,
        });
      }
      const file = await readTextFile("patch", path);
      const found = occurrences(file.text, args.old_string);
      if (found.length === 0) {
        const crlf =
          file.text.includes("\r\n") && args.old_string.includes("\n") && !args.old_string.includes("\r\n");
        throw new ToolError(
          `patch: old_string was found 0 times in ${where}; it must match the file exactly, whitespace ` +
            `included${crlf ? " (the file has CRLF line endings and old_string has bare LF)" : ""}; read_file shows the current text`,
          { path: path.absolute, matches: 0 },
        );
      }
      if (found.length > 1 && !args.replace_all) {
        const lines = found.slice(0, 10).map((offset) => lineAt(file.text, offset));
        throw new ToolError(
          `patch: old_string was found ${found.length} times in ${where} (at lines ${lines.join(", ")}` +
            `${found.length > lines.length ? ", ..." : ""}); add surrounding text to make it unique, or set replace_all`,
          { path: path.absolute, matches: found.length, lines },
        );
      }
      const first = found[0] as number;
      const updated = args.replace_all
        ? file.text.split(args.old_string).join(args.new_string)
        : file.text.slice(0, first) + args.new_string + file.text.slice(first + args.old_string.length);
      await context.beforeFileChange(dirname(path.absolute), "patch");
      await writeTextFile("patch", path, updated);
      return {
        path: path.absolute,
        replacements: args.replace_all ? found.length : 1,
        first_line: lineAt(file.text, first),
        bytes_written: Buffer.byteLength(updated),
      };
    },
  });
}
