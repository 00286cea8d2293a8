// search_files: the lines matching a regular expression (or a literal) in the text files under a
// folder, in plain Node. It skips .git, node_modules, binary and very large files, and stops at a
// bounded number of matches or files, saying so. It searches only inside the file roots and never
// opens a secret file (file-roots.ts): symlinks are not followed, and secret files are skipped.
import type { Dirent } from "node:fs";
import { open, readdir, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { z } from "zod";
import { defineTool } from "./define-tool.js";
import { FileRoots } from "./file-roots.js";
import { compileGlob } from "./glob.js";
import { describePath, displayPath, resolveToolPath } from "./paths.js";
import { fsProblem, looksBinary } from "./text-file.js";
import { type Tool, ToolError } from "./types.js";

export const SKIPPED_FOLDERS = new Set([".git", "node_modules", ".hg", ".svn"]);
export const SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024;
export const SEARCH_MAX_FILES = 20_000;
const MAX_LINE_CHARS = 300;

const schema = z.strictObject({
  pattern: z.string().min(1).describe("A JavaScript regular expression, or plain text with literal: true."),
  path: z.string().min(1).optional().describe("The folder (or file) to search; default the working folder."),
  glob: z
    .string()
    .min(1)
    .optional()
    .describe('Only files matching this glob, e.g. "*.ts" or "src/**/*.test.ts".'),
  literal: z.boolean().optional().describe("Treat pattern as plain text, not a regular expression."),
  case_sensitive: z.boolean().optional().describe("Default true."),
  max_results: z
    .number()
    .int()
    .min(1)
    .max(1_000)
    .optional()
    .describe("At most this many matches (default 100)."),
});

interface Match {
  path: string;
  line: number;
  text: string;
}

function escapeRegExp(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/-]/g, "\\$&");
}

export function searchFilesTool(roots = new FileRoots()): Tool {
  return defineTool({
    name: "search_files",
    description:
      "Find the lines matching a regular expression (or literal text) in the files under a folder, " +
      "optionally only files matching a glob. Skips .git, node_modules, binary files and files over 2 MB." +
      roots.reach,
    schema,
    readOnly: true,
    run: async (args, context) => {
      let regex: RegExp;
      try {
        const source = args.literal ? escapeRegExp(args.pattern) : args.pattern;
        regex = new RegExp(source, args.case_sensitive === false ? "i" : "");
      } catch (error) {
        throw new ToolError(
          `search_files: argument "pattern" is not a valid regular expression (${(error as Error).message}); ` +
            "set literal: true to search for the text as it is",
          { pattern: args.pattern },
        );
      }
      const glob = args.glob === undefined ? undefined : compileGlob(args.glob);
      const maxResults = args.max_results ?? 100;
      const root = resolveToolPath(context.cwd, args.path ?? ".");
      const scope = await roots.scope(context.cwd);
      const realRoot = await scope.judge("search_files", root);
      // Where a path found by the walk really is: the walk follows no link, so only the root's own.
      const real = (path: string) => join(realRoot, relative(root.absolute, path));
      const rootInfo = await stat(root.absolute).catch((error: unknown) => {
        throw new ToolError(`search_files: cannot search ${describePath(root)}: ${fsProblem(error)}`, {
          path: root.absolute,
        });
      });

      const matches: Match[] = [];
      const skipped = { binary: 0, large: 0, unreadable: 0, secret: 0 };
      let filesSearched = 0;
      // An object, not a `let`: it changes inside searchFile, which narrowing cannot see.
      const stop: { reason: "max_results" | "max_files" | null } = { reason: null };

      const searchFile = async (file: string, size: number): Promise<void> => {
        if (size > SEARCH_MAX_FILE_BYTES) {
          skipped.large++;
          return;
        }
        let bytes: Buffer;
        try {
          const handle = await open(file, "r");
          try {
            bytes = await handle.readFile();
          } finally {
            await handle.close();
          }
        } catch {
          skipped.unreadable++;
          return;
        }
        if (looksBinary(bytes)) {
          skipped.binary++;
          return;
        }
        filesSearched++;
        const lines = bytes.toString("utf8").split("\n");
        for (let index = 0; index < lines.length; index++) {
          const line = lines[index] as string;
          if (!regex.test(line)) continue;
          if (matches.length === maxResults) {
            stop.reason = "max_results";
            return;
          }
          const text = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)} [...]` : line;
          matches.push({
            path: displayPath(context.cwd, file),
            line: index + 1,
            text: text.replace(/\r$/, ""),
          });
        }
      };

      if (rootInfo.isFile()) {
        await searchFile(root.absolute, rootInfo.size);
      } else {
        // Depth first, names in order, so results are the same from one call to the next.
        const folders = [root.absolute];
        while (folders.length > 0 && stop.reason === null) {
          context.signal.throwIfAborted();
          const folder = folders.pop() as string;
          let entries: Dirent[];
          try {
            entries = await readdir(folder, { withFileTypes: true });
          } catch {
            skipped.unreadable++;
            continue;
          }
          entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
          const subfolders: string[] = [];
          for (const entry of entries) {
            if (stop.reason !== null) break;
            const full = join(folder, entry.name);
            // Symlinks are not followed: a link loop would never end.
            if (entry.isDirectory()) {
              if (SKIPPED_FOLDERS.has(entry.name)) continue;
              if (scope.secret(real(full), full) !== null) skipped.secret++;
              else subfolders.push(full);
              continue;
            }
            if (!entry.isFile()) continue;
            if (glob && !glob.matches(relative(root.absolute, full).split(sep).join("/"))) continue;
            if (scope.secret(real(full), full) !== null) {
              skipped.secret++;
              continue;
            }
            if (filesSearched + skipped.binary + skipped.large >= SEARCH_MAX_FILES) {
              stop.reason = "max_files";
              break;
            }
            const size = await stat(full).then(
              (info) => info.size,
              () => -1,
            );
            if (size === -1) skipped.unreadable++;
            else await searchFile(full, size);
          }
          folders.push(...subfolders.reverse());
        }
      }

      return {
        pattern: args.pattern,
        root: root.absolute,
        matches,
        files_searched: filesSearched,
        truncated: stop.reason !== null,
        ...(stop.reason === "max_results"
          ? {
              note: `stopped at ${maxResults} matches; narrow the pattern, path or glob, or raise max_results`,
            }
          : stop.reason === "max_files"
            ? { note: `stopped after ${SEARCH_MAX_FILES} files; search a smaller folder or use a glob` }
            : {}),
        skipped,
      };
    },
  });
}
