// The real `tenax` CLI as a child process (the built code in dist/: `npm run build` first), on a
// throwaway TENAX_HOME, and the commands that its hints print, run exactly as printed by a shell.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dirname, "..", "..");
export const BIN = join(ROOT, "bin", "tenax.js");

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function requireBuild(): void {
  if (!existsSync(join(ROOT, "dist", "bundle", "main.js")))
    throw new Error("dist/ is missing: run `npm run build` first");
}

const keys = new Map<string, string>();

/**
 * The gateway key every `tenax` child of this home gets as TENAX_API_KEY (gateway.api_key's
 * default), so a gateway, `tenax status` and the dashboard of one home agree on it, as they do when
 * they read it from the profile's .env. Random per home, never a real key.
 */
export function testGatewayKey(home: string): string {
  let key = keys.get(home);
  if (key === undefined) {
    key = `tnx-test-${randomBytes(16).toString("hex")}`;
    keys.set(home, key);
  }
  return key;
}

/**
 * The environment of a `tenax` child on `home`: this one's, TENAX_HOME and HOME on the home, and
 * the home's test gateway key. `overrides` adds variables; an undefined one is removed (give
 * `{ TENAX_API_KEY: undefined }` for a gateway that must find or write a key of its own).
 */
export function cliEnvironment(home: string, overrides: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TENAX_HOME: home,
    HOME: home,
    TENAX_API_KEY: testGatewayKey(home),
  };
  delete env.TENAX_PROFILE;
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return env;
}

export function tenax(home: string, args: string[]): Run {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: cliEnvironment(home),
    encoding: "utf8",
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** A child process run to its end without blocking this one, its output collected. */
export function runAsync(
  command: string,
  args: string[],
  options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding("utf8").on("data", (c: string) => {
      stderr += c;
    });
    child.on("close", (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/**
 * The CLI without blocking this process: use it whenever something the CLI talks to (a
 * simulator) runs in the test process, where a synchronous spawn would wait on itself forever.
 */
export function tenaxAsync(
  home: string,
  args: string[],
  options: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  const { env, ...rest } = options;
  return runAsync(process.execPath, [BIN, ...args], { ...rest, env: cliEnvironment(home, env) });
}

/** Every `tenax ...` command a text prints after a colon or at the start of a line. */
export function printedCommands(text: string): string[] {
  return [...text.matchAll(/(?:^|: )(tenax [^\n]*?)\s*$/gm)].map((m) => m[1] ?? "");
}

/** Run one printed command through a shell, with `tenax` meaning this CLI, from another folder. */
export function runPrinted(home: string, command: string): Run {
  const script = `tenax() { "${process.execPath}" "${BIN}" "$@"; }\n${command}`;
  const result = spawnSync("sh", ["-c", script], { cwd: home, env: cliEnvironment(home), encoding: "utf8" });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Like runPrinted, without blocking this process (a simulator or a page may run in it). */
export function runPrintedAsync(home: string, command: string): Promise<Run> {
  const script = `tenax() { "${process.execPath}" "${BIN}" "$@"; }\n${command}`;
  return runAsync("sh", ["-c", script], { cwd: home, env: cliEnvironment(home) });
}
