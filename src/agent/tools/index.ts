// The tools the agent has, built from the shared pieces they need. Each family has its own builder
// (files and processes here; memory, todo, session_search and delegate_task join the same way), and
// `toolSet` puts families together, refusing a name given twice.
import type { ProcessRegistry } from "../processes.js";
import type { FileRoots } from "./file-roots.js";
import { patchTool } from "./patch.js";
import { processTool } from "./process.js";
import { readFileTool } from "./read-file.js";
import { searchFilesTool } from "./search-files.js";
import { type TerminalOptions, terminalTool } from "./terminal.js";
import type { Tool } from "./types.js";
import { writeFileTool } from "./write-file.js";

export { defineTool } from "./define-tool.js";
export { FileRoots } from "./file-roots.js";
export type { Tool, ToolContext, ToolEvent } from "./types.js";
export { ToolError } from "./types.js";

export interface FileAndProcessToolOptions {
  /** Where read_file, write_file, patch and search_files may act; by default the working folder only. */
  files?: FileRoots;
  terminal?: TerminalOptions;
}

/** read_file, write_file, patch, search_files, terminal and process, over one process registry. */
export function fileAndProcessTools(
  registry: ProcessRegistry,
  options: FileAndProcessToolOptions = {},
): Tool[] {
  return [
    readFileTool(options.files),
    writeFileTool(options.files),
    patchTool(options.files),
    searchFilesTool(options.files),
    terminalTool(registry, options.terminal),
    processTool(registry),
  ];
}

/** The tools by name, from one or more families; a name given twice is a programming error. */
export function toolSet(...families: Tool[][]): Map<string, Tool> {
  const byName = new Map<string, Tool>();
  for (const tool of families.flat()) {
    if (byName.has(tool.spec.name)) throw new Error(`two tools are named "${tool.spec.name}"`);
    byName.set(tool.spec.name, tool);
  }
  return byName;
}
