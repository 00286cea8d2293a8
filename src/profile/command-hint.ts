// The `tenax` command lines that hints print: they must work exactly as printed, so they carry the
// profile flag whenever the profile is not the default one.
import { commandLine } from "../core/errors.js";
import { DEFAULT_PROFILE } from "./paths.js";

/** `tenax [--profile NAME] ARGS...`, quoted for a POSIX shell. */
export function tenaxCommand(profile: string, args: readonly string[]): string {
  const select = profile === DEFAULT_PROFILE ? [] : ["--profile", profile];
  return commandLine(["tenax", ...select, ...args]);
}
