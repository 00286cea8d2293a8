// Where a path argument points: relative paths resolve against the task's folder; absolute ones
// and ~ are taken as written, and file-roots.ts then judges whether the tool may act there. Errors
// show both what the model wrote and the absolute path it meant.
import { homedir } from "node:os";
import { isAbsolute, join, relative, resolve, sep } from "node:path";

export interface ToolPath {
  /** As the model wrote it. */
  given: string;
  absolute: string;
}

export function resolveToolPath(cwd: string, given: string): ToolPath {
  if (given === "~") return { given, absolute: homedir() };
  if (given.startsWith("~/")) return { given, absolute: join(homedir(), given.slice(2)) };
  return { given, absolute: resolve(cwd, given) };
}

/** `"src/a.ts" (/home/me/project/src/a.ts)`, or just the path when it was given absolute. */
export function describePath(path: ToolPath): string {
  return isAbsolute(path.given) || path.given === path.absolute
    ? `"${path.absolute}"`
    : `"${path.given}" (${path.absolute})`;
}

/** A path for results: relative to `cwd` when inside it, absolute otherwise. */
export function displayPath(cwd: string, absolute: string): string {
  const rel = relative(cwd, absolute);
  if (rel === "") return ".";
  return rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel) ? absolute : rel;
}
