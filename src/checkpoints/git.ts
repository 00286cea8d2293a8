// Runs the real `git` binary for the checkpoint store, sealed off from everything but Tenax's own
// store: no shell, an environment built from scratch, and no user, system or project settings.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { TenaxError } from "../core/errors.js";

export interface GitTarget {
  /** The git binary (a name looked up on PATH, or a path). */
  binary: string;
  /** Tenax's repository under the checkpoint store; never a project's own `.git`. */
  gitDir: string;
  /** An empty folder of Tenax's used as HOME, so no ~/.gitconfig or XDG config is found. */
  home: string;
}

export interface GitCall {
  /** The project whose files are read or written (GIT_WORK_TREE and the working directory). */
  workTree?: string;
  /** The project's own index file inside the store (GIT_INDEX_FILE). */
  indexFile?: string;
  /** Bytes fed to git's standard input. */
  input?: string;
  /** Extra environment entries (author dates). */
  env?: Record<string, string>;
  /** Exit codes that are answers rather than failures (e.g. 1 for `cat-file -e`). */
  okCodes?: readonly number[];
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

// Settings that must hold whatever the store's own config file says: no hooks, no signing, no
// line-ending or filter conversion (bytes go in and come out unchanged), no background work.
const FIXED_CONFIG = [
  "core.hooksPath=/dev/null",
  "core.autocrlf=false",
  "core.safecrlf=false",
  "core.symlinks=true",
  "core.filemode=true",
  "core.fsmonitor=false",
  "core.untrackedCache=false",
  "core.quotePath=false",
  "core.attributesFile=/dev/null",
  "core.excludesFile=/dev/null",
  "core.logAllRefUpdates=false",
  "commit.gpgSign=false",
  "tag.gpgSign=false",
  "gc.autoDetach=false",
  "maintenance.auto=false",
  "init.defaultBranch=tenax",
  "advice.detachedHead=false",
];

/** The identity of every snapshot commit: fixed, so nothing is taken from the user's config. */
export const IDENTITY = { name: "Tenax checkpoints", email: "checkpoints@tenax.invalid" };

const MAX_OUTPUT = 256 * 1024 * 1024;

export function gitEnvironment(target: GitTarget, call: GitCall): NodeJS.ProcessEnv {
  // Built from scratch: an inherited GIT_DIR, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS or
  // GIT_OBJECT_DIRECTORY would point git at someone else's repository or settings.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    LC_ALL: "C",
    HOME: target.home,
    XDG_CONFIG_HOME: target.home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_SYSTEM: "/dev/null",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_DIR: target.gitDir,
    GIT_AUTHOR_NAME: IDENTITY.name,
    GIT_AUTHOR_EMAIL: IDENTITY.email,
    GIT_COMMITTER_NAME: IDENTITY.name,
    GIT_COMMITTER_EMAIL: IDENTITY.email,
    ...call.env,
  };
  if (call.workTree !== undefined) env.GIT_WORK_TREE = call.workTree;
  if (call.indexFile !== undefined) env.GIT_INDEX_FILE = call.indexFile;
  return env;
}

/** Run `git ARGS` against the store; a non-zero exit outside `okCodes` rejects with git's words. */
export function runGit(target: GitTarget, args: readonly string[], call: GitCall = {}): Promise<GitResult> {
  const argv = [...FIXED_CONFIG.flatMap((setting) => ["-c", setting]), ...args];
  const cwd = call.workTree ?? "/";
  return new Promise((resolve, reject) => {
    const child = execFile(
      target.binary,
      argv,
      {
        cwd,
        env: gitEnvironment(target, call),
        encoding: "utf8",
        maxBuffer: MAX_OUTPUT,
        windowsHide: true,
      },
      (error, stdout, stderr) => {
        if (error === null) {
          resolve({ code: 0, stdout, stderr });
          return;
        }
        const code = typeof error.code === "number" ? error.code : null;
        if (code !== null && call.okCodes?.includes(code)) {
          resolve({ code, stdout, stderr });
          return;
        }
        if (error.code === "ENOENT") {
          // Node reports a missing working directory as ENOENT too, as if git were missing.
          reject(existsSync(cwd) ? gitMissing(target.binary, error) : projectGone(cwd, error));
          return;
        }
        reject(
          new TenaxError(
            "checkpoint_git_failed",
            `git ${args[0] ?? ""} failed in the checkpoint store: ${firstLines(stderr) || error.message}`,
            {
              cause: error,
              data: { args: [...args], exit_code: code, stderr: stderr.slice(0, 4000) },
            },
          ),
        );
      },
    );
    if (call.input !== undefined) child.stdin?.end(call.input);
  });
}

export function gitMissing(binary: string, cause?: unknown): TenaxError {
  return new TenaxError("checkpoint_git_missing", `checkpoints need git, and \`${binary}\` was not found`, {
    hint: "install git (for example: apt-get install git), then check with: git --version",
    cause,
  });
}

function projectGone(dir: string, cause: unknown): TenaxError {
  return new TenaxError("checkpoint_project_gone", `the project folder ${dir} is gone`, { cause });
}

/** `git --version`, or the typed error that says git is missing. */
export async function gitVersion(target: GitTarget): Promise<string> {
  const { stdout } = await runGit(target, ["--version"]);
  return stdout.trim();
}

function firstLines(text: string): string {
  return text.trim().split("\n").slice(0, 3).join(" / ");
}
