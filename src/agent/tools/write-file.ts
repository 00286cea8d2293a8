// write_file: a whole file's new content, written atomically (readers see the old file or the new,
// never half), after the checkpoint layer had its chance to snapshot the project.
import { dirname } from "node:path";
import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { FileRoots } from "./file-roots.js";
import { resolveToolPath } from "./paths.js";
import { nearestExistingDir, writeTextFile } from "./text-file.js";
import type { Tool } from "./types.js";

const schema = z.strictObject({
  path: z.string().min(1).describe("The file: relative to the working folder, or absolute."),
  content: z.string().describe("The file's whole new content."),
});

export function writeFileTool(roots = new FileRoots()): Tool {
  return defineTool({
    name: "write_file",
    description:
      "Create a file or replace its whole content; missing parent folders are created. " +
      "To change part of a file, use patch." +
      roots.reach,
    schema,
    readOnly: false,
    run: async (args, context) => {
      const path = resolveToolPath(context.cwd, args.path);
      await (await roots.scope(context.cwd)).judge("write_file", path);
      await context.beforeFileChange(await nearestExistingDir(dirname(path.absolute)), "write_file");
      const { created } = await writeTextFile("write_file", path, args.content);
      return { path: path.absolute, bytes_written: Buffer.byteLength(args.content), created };
    },
  });
}
