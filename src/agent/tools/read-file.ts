// read_file: a window of lines of a text file, bounded in lines and bytes, saying where it stopped
// so the next call can go on from there.
import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { FileRoots } from "./file-roots.js";
import { describePath, resolveToolPath } from "./paths.js";
import { readTextFile } from "./text-file.js";
import { type Tool, ToolError } from "./types.js";

export const READ_DEFAULT_LINES = 2_000;
/** The most content one call returns; a window cut here ends at a line boundary. */
export const READ_MAX_BYTES = 100 * 1024;
/** Longer lines (minified code, data) are cut, with a note in the line itself. */
export const READ_MAX_LINE_CHARS = 4_000;

const schema = z.strictObject({
  path: z.string().min(1).describe("The file: relative to the working folder, or absolute."),
  offset: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("The first line to return, counting from 1 (default 1)."),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`How many lines to return at most (default ${READ_DEFAULT_LINES}).`),
});

export function readFileTool(roots = new FileRoots()): Tool {
  return defineTool({
    name: "read_file",
    description:
      "Read a text file, or a window of its lines (offset, limit). Says when the result was cut and " +
      "which offset continues it. Binary files and files over 10 MB are refused." +
      roots.reach,
    schema,
    readOnly: true,
    run: async (args, context) => {
      const path = resolveToolPath(context.cwd, args.path);
      await (await roots.scope(context.cwd)).judge("read_file", path);
      const file = await readTextFile("read_file", path);
      const lines = file.text.split("\n");
      const endsWithNewline = lines.at(-1) === "";
      if (endsWithNewline) lines.pop();
      const total = lines.length;
      const offset = args.offset ?? 1;
      if (offset > Math.max(total, 1)) {
        throw new ToolError(
          `read_file: argument "offset" is ${offset}, past the end of ${describePath(path)}, which has ${total} lines`,
          { path: path.absolute, total_lines: total },
        );
      }
      const limit = args.limit ?? READ_DEFAULT_LINES;
      const picked: string[] = [];
      let bytes = 0;
      let cutLines = 0;
      let stoppedBy: "limit" | "bytes" | null = null;
      for (let index = offset - 1; index < total; index++) {
        if (picked.length === limit) {
          stoppedBy = "limit";
          break;
        }
        let line = lines[index] ?? "";
        if (line.length > READ_MAX_LINE_CHARS) {
          line = `${line.slice(0, READ_MAX_LINE_CHARS)} [... line cut at ${READ_MAX_LINE_CHARS} of ${line.length} characters]`;
          cutLines++;
        }
        const size = Buffer.byteLength(line) + 1;
        if (picked.length > 0 && bytes + size > READ_MAX_BYTES) {
          stoppedBy = "bytes";
          break;
        }
        picked.push(line);
        bytes += size;
      }
      const endLine = offset - 1 + picked.length;
      const newline = endLine < total || endsWithNewline ? "\n" : "";
      const result: Record<string, unknown> = {
        path: path.absolute,
        content: picked.length > 0 ? picked.join("\n") + newline : "",
        start_line: picked.length > 0 ? offset : 0,
        end_line: endLine,
        total_lines: total,
        truncated: endLine < total,
      };
      if (endLine < total) {
        result.next_offset = endLine + 1;
        result.note =
          stoppedBy === "bytes"
            ? `cut at ${READ_MAX_BYTES} bytes after line ${endLine} of ${total}; read on with offset ${endLine + 1}`
            : `lines ${offset}-${endLine} of ${total}; read on with offset ${endLine + 1}`;
      }
      if (cutLines > 0) result.long_lines_cut = cutLines;
      return result;
    },
  });
}
