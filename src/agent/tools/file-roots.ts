// Where the file tools (read_file, write_file, patch, search_files) may act: inside the session's
// working folder and tools.files.roots (or anywhere in `full` mode), never on a secret file a root
// does not name. Paths are judged where they really land, after every symlink.
import { homedir } from "node:os";
import { join } from "node:path";
import type { FilesConfig } from "../../config/tools-files-schema.js";
import { describePath, type ToolPath } from "./paths.js";
import { isInside, realPathOf } from "./real-path.js";
import { type ProfileFolders, type SecretMatch, secretFile } from "./secret-files.js";
import { ToolError } from "./types.js";

export interface FileRootsOptions {
  /** The profile whose .env, config.yaml and store are secret (with every profile of its home). */
  profile?: ProfileFolders;
  /** What `~` in a root means; the user's home by default. */
  home?: string;
}

function expandHome(path: string, home: string): string {
  if (path === "~") return home;
  return path.startsWith("~/") ? join(home, path.slice(2)) : path;
}

/** The policy, built once from config and the profile; `scope` judges paths for one tool call. */
export class FileRoots {
  readonly mode: FilesConfig["mode"];
  /** The roots as absolute paths, `~` expanded, not yet through symlinks. */
  readonly roots: readonly string[];
  private readonly profile: ProfileFolders | null;

  constructor(config: FilesConfig = { mode: "roots", roots: [] }, options: FileRootsOptions = {}) {
    const home = options.home ?? homedir();
    this.mode = config.mode;
    this.roots = config.roots.map((root) => expandHome(root, home));
    this.profile = options.profile ?? null;
  }

  /** The boundary in a sentence, for the tools' descriptions: the model learns it before it trips on it. */
  get reach(): string {
    const secrets = "secret files (Tenax's .env and config, SSH keys, .pem files, /etc/shadow) are refused";
    return this.mode === "full"
      ? ` Any path works, but ${secrets}.`
      : ` Only paths inside the working folder and the configured roots work, and ${secrets}.`;
  }

  /** Resolves the working folder, the roots and the profile once, for every path of one call. */
  async scope(cwd: string): Promise<FileScope> {
    const profile =
      this.profile === null
        ? null
        : { home: await realPathOf(this.profile.home), dir: await realPathOf(this.profile.dir) };
    const realRoots = await Promise.all(this.roots.map(realPathOf));
    return new FileScope(this.mode, cwd, await realPathOf(cwd), [...this.roots, ...realRoots], profile);
  }
}

export class FileScope {
  constructor(
    readonly mode: FilesConfig["mode"],
    private readonly cwd: string,
    private readonly realCwd: string,
    /** Every root as written (expanded) and through its symlinks. */
    private readonly roots: string[],
    private readonly profile: ProfileFolders | null,
  ) {}

  /** A secret file that no root names: `path` is checked as written and where it really lands. */
  secret(real: string, absolute = real): SecretMatch | null {
    for (const path of new Set([absolute, real])) {
      const match = secretFile(path, this.profile);
      if (match !== null && !match.unlockedBy.some((unlock) => this.roots.includes(unlock))) return match;
    }
    return null;
  }

  /** Whether a real path lies inside the working folder or a root (always, in `full` mode). */
  inRoots(real: string): boolean {
    if (this.mode === "full") return true;
    return isInside(real, this.realCwd) || this.roots.some((root) => isInside(real, root));
  }

  /**
   * The real path `tool` may act on for `path`, or a ToolError for the model naming the rule that
   * refused it and the setting that would allow it.
   */
  async judge(tool: string, path: ToolPath): Promise<string> {
    const real = await realPathOf(path.absolute);
    const where = describePath(path);
    const via = real === path.absolute ? "" : ` leads to ${real}, which`;
    const secret = this.secret(real, path.absolute);
    if (secret !== null) {
      const unlock = secret.unlockedBy.at(-1) as string;
      throw new ToolError(
        `${tool}: ${where}${via} is ${secret.what}, a secret file the file tools refuse anywhere, even with ` +
          `tools.files.mode: full; to allow it, add ${unlock} itself to tools.files.roots in config.yaml`,
        { path: path.absolute, real_path: real, rule: "secret_file", setting: "tools.files.roots" },
      );
    }
    if (!this.inRoots(real)) {
      throw new ToolError(
        `${tool}: ${where}${via} is outside the working folder ${this.cwd} and tools.files.roots; add ` +
          `${real} (or a folder holding it) to tools.files.roots in config.yaml, or set tools.files.mode: full`,
        { path: path.absolute, real_path: real, rule: "outside_roots", setting: "tools.files.roots" },
      );
    }
    return real;
  }
}
