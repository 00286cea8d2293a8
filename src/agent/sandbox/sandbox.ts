// Where an agent's commands run (tools.exec.sandbox): in a bubblewrap sandbox (`bwrap`), which
// shows a command only the system's folders, its working roots and private scratch folders, in a
// pid namespace of its own, or (`none`) straight on the machine. `auto`, the default, takes
// bubblewrap when it is installed and works, and says which it took; `bwrap` refuses to start
// without it. The choice is made once, when the agent starts.
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, isAbsolute, join, resolve } from "node:path";
import { TenaxError } from "../../core/errors.js";
import { bwrapArgs } from "./bwrap-args.js";
import { type LayoutInput, real, type SandboxLayout, sandboxLayout, within } from "./bwrap-layout.js";
import { supervised } from "./supervisor.js";

export type SandboxMode = "auto" | "bwrap" | "none";

/** How to start a command: the program, its arguments and its environment. */
export interface SandboxedSpawn {
  file: string;
  args: string[];
  env: Record<string, string>;
}

/** A way to run commands sandboxed; its started program reports on fd 3 (supervisor.ts). */
export interface CommandSandbox {
  /** What runs the commands, for people: "bubblewrap 0.8.0 (/usr/bin/bwrap)". */
  readonly description: string;
  spawn(command: string, cwd: string, env: Record<string, string>): SandboxedSpawn;
}

export class BwrapSandbox implements CommandSandbox {
  constructor(
    readonly bwrap: string,
    readonly version: string,
    readonly layout: SandboxLayout,
    private readonly root: boolean,
  ) {}

  get description(): string {
    return `${this.version} (${this.bwrap})`;
  }

  spawn(command: string, given: string, env: Record<string, string>): SandboxedSpawn {
    // The real path: a working folder that is a link into Tenax's home is hidden as that home.
    const cwd = real(given);
    const args = [...bwrapArgs(this.layout, cwd, { root: this.root }), "--", ...supervised(command)];
    // A TMPDIR the sandbox does not show would fail every program that makes a temp file.
    const tmp = env.TMPDIR;
    const shown = (path: string) => [cwd, "/tmp", ...this.layout.roots].some((r) => within(path, r));
    return {
      file: this.bwrap,
      args,
      env: tmp === undefined || shown(resolve(tmp)) ? env : { ...env, TMPDIR: "/tmp" },
    };
  }
}

export type BwrapProbe = { ok: true; path: string; version: string } | { ok: false; problem: string };

/** The first `bwrap` on PATH that this user may run, or null. */
export function whichBwrap(path: string | undefined): string | null {
  for (const dir of (path ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const file = join(dir, "bwrap");
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return null;
}

function run(file: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  return new Promise((done) => {
    execFile(
      file,
      args,
      { timeout: 10_000, encoding: "utf8", env: { PATH: "/usr/bin:/bin" } },
      (error, stdout, stderr) => done({ ok: error === null, out: `${stdout}${stderr}`.trim() }),
    );
  });
}

/**
 * Whether bubblewrap is installed and can make this layout's sandbox for this user (a kernel or a
 * policy may forbid the namespaces it needs): it runs one command in it that checks it is in a
 * pid namespace of its own.
 */
export async function probeBwrap(
  layout: SandboxLayout,
  env: NodeJS.ProcessEnv = process.env,
): Promise<BwrapProbe> {
  const path = whichBwrap(env.PATH);
  if (path === null) return { ok: false, problem: "bubblewrap (bwrap) is not installed or not on PATH" };
  const version = await run(path, ["--version"]);
  const root = process.getuid?.() === 0;
  const trial = await run(path, [
    ...bwrapArgs(layout, tmpdir(), { root }),
    "--",
    "/bin/sh",
    "-c",
    '[ "$$" -le 3 ]',
  ]);
  if (!trial.ok)
    return {
      ok: false,
      problem: `${path} cannot make a sandbox for this user${trial.out === "" ? "" : ` (${trial.out.split("\n")[0]})`}`,
    };
  return { ok: true, path, version: version.ok ? version.out : "bubblewrap" };
}

export interface SandboxChoice {
  sandbox: CommandSandbox | null;
  mode: SandboxMode;
  /** One line for people (tenax doctor): what runs the commands and why. */
  detail: string;
}

export class SandboxUnavailableError extends TenaxError {
  override readonly name = "SandboxUnavailableError";
}

/** The sandbox for an agent's commands under tools.exec.sandbox `mode`. */
export async function chooseSandbox(
  mode: SandboxMode,
  input: LayoutInput,
  probe: (layout: SandboxLayout) => Promise<BwrapProbe> = (layout) => probeBwrap(layout),
): Promise<SandboxChoice> {
  if (mode === "none")
    return {
      sandbox: null,
      mode,
      detail: "tools.exec.sandbox is none: commands run without a sandbox and reach what Tenax's user can",
    };
  const layout = sandboxLayout(input);
  const found = await probe(layout);
  if (found.ok) {
    const sandbox = new BwrapSandbox(found.path, found.version, layout, process.getuid?.() === 0);
    return { sandbox, mode, detail: `commands run in a bubblewrap sandbox: ${sandbox.description}` };
  }
  if (mode === "bwrap")
    throw new SandboxUnavailableError(
      "sandbox_unavailable",
      `tools.exec.sandbox is bwrap, but ${found.problem}`,
      {
        hint: "install bubblewrap (Debian: apt-get install bubblewrap) and check that `bwrap --ro-bind / / true` runs as this user, or set tools.exec.sandbox: auto in config.yaml to run commands without a sandbox where it is missing",
        data: { mode },
      },
    );
  return {
    sandbox: null,
    mode,
    detail: `${found.problem}, so commands run without a sandbox (tools.exec.sandbox is auto; install bubblewrap: apt-get install bubblewrap)`,
  };
}
