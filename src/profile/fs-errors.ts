// File system failures turned into ConfigErrors that say what broke and what to do about it, with
// commands that work exactly as printed.
import { accessSync, constants, existsSync } from "node:fs";
import { dirname } from "node:path";
import { ConfigError, commandLine, errorMessage } from "../core/errors.js";

function errnoCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null ? (error as NodeJS.ErrnoException).code : undefined;
}

/** Reading `file` failed. */
export function fileReadError(error: unknown, file: string): ConfigError {
  const code = errnoCode(error);
  const data = { file, errno: code ?? null };
  if (code === "EACCES" || code === "EPERM") {
    return new ConfigError(`cannot read ${file}: permission denied`, {
      cause: error,
      data,
      hint: `make it readable by the user running Tenax (check the owner and mode with: ${commandLine(["ls", "-l", file])})`,
    });
  }
  if (code === "EISDIR") {
    return new ConfigError(`cannot read ${file}: it is a directory, not a file`, {
      cause: error,
      data,
      hint: "move the directory out of the way; Tenax expects a file there",
    });
  }
  return new ConfigError(`cannot read ${file}: ${errorMessage(error)}`, { cause: error, data });
}

/**
 * Writing under `path` failed while doing `action` (e.g. "create profile dev"). `folder` is the
 * directory the user should look at, by default the parent of `path`.
 */
export function fileWriteError(
  error: unknown,
  action: string,
  path: string,
  folder = dirname(path),
): ConfigError {
  // A recursive mkdir on a read-only or closed folder can report ENOENT: ask the folder itself.
  const reported = errnoCode(error);
  const code = reported === "ENOENT" ? (writeProblem(folder) ?? reported) : reported;
  const data = { path, errno: code ?? null };
  const elsewhere = "or set TENAX_HOME to a folder you can write to";
  switch (code) {
    case "EACCES":
    case "EPERM":
      return new ConfigError(`cannot ${action}: permission denied writing ${path}`, {
        cause: error,
        data,
        hint: `make ${folder} writable by this user (check with: ${commandLine(["ls", "-ld", folder])}), ${elsewhere}`,
      });
    case "EROFS":
      return new ConfigError(`cannot ${action}: ${folder} is on a read-only file system`, {
        cause: error,
        data,
        hint: `remount it read-write, ${elsewhere}`,
      });
    case "ENOSPC":
    case "EDQUOT":
      return new ConfigError(`cannot ${action}: no space left on the disk holding ${folder}`, {
        cause: error,
        data,
        hint: `free some space (check with: ${commandLine(["df", "-h", folder])}), then run the command again`,
      });
    default:
      return new ConfigError(`cannot ${action}: ${errorMessage(error)}`, { cause: error, data });
  }
}

/** Why this folder cannot be written to, if it exists and cannot be. */
function writeProblem(folder: string): string | undefined {
  if (!existsSync(folder)) return undefined;
  try {
    accessSync(folder, constants.W_OK);
    return undefined;
  } catch (error) {
    return errnoCode(error);
  }
}

/** The closest folder on the way up from `path` that exists: the one that refused a new entry. */
export function nearestExisting(path: string): string {
  let current = path;
  while (!existsSync(current) && dirname(current) !== current) current = dirname(current);
  return current;
}
