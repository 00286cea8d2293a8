// Reading and writing the text files the file tools work on: only regular text files of a bounded
// size are read (a FIFO would block, a binary would fill the context with noise), and writes land
// atomically through the config layer's temp-file-and-rename, keeping the file's mode and symlinks.
import { lstat, mkdir, open, realpath, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { errorMessage } from "../../core/errors.js";
import { writeFileAtomic } from "../../profile/atomic-write.js";
import { describePath, type ToolPath } from "./paths.js";
import { ToolError } from "./types.js";

export const MAX_TEXT_FILE_BYTES = 10 * 1024 * 1024;
const SNIFF_BYTES = 8_000;

export function errnoCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as NodeJS.ErrnoException).code : undefined;
}

/** What went wrong with a file, in words. */
export function fsProblem(error: unknown): string {
  switch (errnoCode(error)) {
    case "ENOENT":
      return "it does not exist";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "ENOTDIR":
      return "a part of the path is a file, not a folder";
    case "EISDIR":
      return "it is a folder, not a file";
    case "ENOSPC":
      return "the disk is full";
    case "EROFS":
      return "the file system is read-only";
    default:
      return errorMessage(error);
  }
}

/** Text has no NUL bytes; nearly every binary format has them early. */
export function looksBinary(bytes: Buffer): boolean {
  return bytes.subarray(0, SNIFF_BYTES).includes(0);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export interface TextFile {
  text: string;
  bytes: number;
  /** Permission bits, kept when the file is rewritten. */
  mode: number;
}

export async function readTextFile(
  tool: string,
  path: ToolPath,
  maxBytes = MAX_TEXT_FILE_BYTES,
): Promise<TextFile> {
  const where = describePath(path);
  const info = await stat(path.absolute).catch((error: unknown) => {
    throw new ToolError(`${tool}: cannot read ${where}: ${fsProblem(error)}`, { path: path.absolute });
  });
  if (info.isDirectory()) {
    throw new ToolError(
      `${tool}: ${where} is a folder, not a file; search_files or terminal "ls" show what it holds`,
      { path: path.absolute },
    );
  }
  if (!info.isFile()) {
    throw new ToolError(`${tool}: ${where} is not a regular file (a device, socket or pipe)`, {
      path: path.absolute,
    });
  }
  if (info.size > maxBytes) {
    throw new ToolError(
      `${tool}: ${where} is ${formatBytes(info.size)}, more than the ${formatBytes(maxBytes)} this tool ` +
        `handles; use terminal with head, tail, grep or sed -n to work on parts of it`,
      { path: path.absolute, bytes: info.size, max_bytes: maxBytes },
    );
  }
  const handle = await open(path.absolute, "r").catch((error: unknown) => {
    throw new ToolError(`${tool}: cannot read ${where}: ${fsProblem(error)}`, { path: path.absolute });
  });
  let bytes: Buffer;
  try {
    bytes = await handle.readFile();
  } finally {
    await handle.close();
  }
  if (looksBinary(bytes)) {
    throw new ToolError(`${tool}: ${where} looks binary (it contains NUL bytes); this tool reads text only`, {
      path: path.absolute,
    });
  }
  return { text: bytes.toString("utf8"), bytes: bytes.length, mode: info.mode & 0o7777 };
}

/** The nearest folder at or above `dir` that exists: what a snapshot before creating files can see. */
export async function nearestExistingDir(dir: string): Promise<string> {
  let at = dir;
  for (;;) {
    const info = await stat(at).catch(() => null);
    if (info?.isDirectory()) return at;
    const parent = dirname(at);
    if (parent === at) return at;
    at = parent;
  }
}

/**
 * Writes `text` in place of the file atomically, creating parent folders. A symlink is written
 * through (its target changes, the link stays); an existing file keeps its mode.
 */
export async function writeTextFile(
  tool: string,
  path: ToolPath,
  text: string,
): Promise<{ created: boolean }> {
  const where = describePath(path);
  const fail = (error: unknown): never => {
    throw new ToolError(`${tool}: cannot write ${where}: ${fsProblem(error)}`, { path: path.absolute });
  };
  let target = path.absolute;
  const link = await lstat(target).catch(() => null);
  if (link?.isSymbolicLink()) target = await realpath(target).catch(() => target);
  const existing = await stat(target).catch(() => null);
  if (existing?.isDirectory()) {
    throw new ToolError(`${tool}: ${where} is a folder; give the path of a file inside it`, {
      path: path.absolute,
    });
  }
  if (existing && !existing.isFile()) {
    throw new ToolError(`${tool}: ${where} is not a regular file (a device, socket or pipe)`, {
      path: path.absolute,
    });
  }
  await mkdir(dirname(target), { recursive: true }).catch((error: unknown) =>
    // mkdir says EEXIST when a file stands where a folder of the path should be.
    fail(errnoCode(error) === "EEXIST" ? Object.assign(new Error(), { code: "ENOTDIR" }) : error),
  );
  await writeFileAtomic(target, text, existing ? existing.mode & 0o7777 : 0o666).catch(fail);
  return { created: existing === null };
}
