// Starting one command: `sh -c COMMAND` leading a new process group, or bwrap leading it with the
// shell inside its sandbox (sandbox/); its stdout and stderr piped into bounded buffers with the
// profile's secrets redacted on the way in; and its end, which is the child's exit, or, in a
// sandbox, the supervisor's word on fd 3 that the shell exited leaving processes behind (bwrap
// then stays until they are gone, so the group keeps counting as running).
import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import type { Redactor } from "../core/redact.js";
import { OutputBuffer } from "./output-buffer.js";
import { pipeOutput } from "./output-pipe.js";
import { readStat } from "./process-group.js";
import type { CommandSandbox } from "./sandbox/sandbox.js";
import { leftCode, STATUS_FD } from "./sandbox/supervisor.js";

export interface SpawnOptions {
  cwd: string;
  /** The command's whole environment. */
  env: Record<string, string>;
  sandbox: CommandSandbox | null;
  redactor: Redactor;
  headBytes: number;
  tailBytes: number;
}

export interface SpawnedCommand {
  child: ChildProcess;
  /** The group's leader: the shell, or bwrap. */
  pid: number;
  /** Its start time in /proc (null off Linux), which the ledger records with the pid. */
  start: number | null;
  stdout: OutputBuffer;
  stderr: OutputBuffer;
  /** The shell's end: its exit code, or the signal that ended it (bwrap's, in a sandbox). */
  ended: Promise<{ code: number | null; signal: string | null }>;
  /** Every output pipe closed. */
  closed: Promise<void>;
}

/** Starts the command; rejects when it cannot start (its folder is missing, say). */
export async function spawnCommand(command: string, options: SpawnOptions): Promise<SpawnedCommand> {
  const { sandbox, env } = options;
  const how = sandbox?.spawn(command, options.cwd, env) ?? { file: "/bin/sh", args: ["-c", command], env };
  const child = spawn(how.file, how.args, {
    cwd: options.cwd,
    env: how.env,
    detached: true,
    stdio: sandbox === null ? ["ignore", "pipe", "pipe"] : ["ignore", "pipe", "pipe", "pipe"],
  });
  // Read before the event loop runs, so the child cannot have been reaped yet.
  const stat = child.pid === undefined ? undefined : readStat(child.pid)?.start;
  const ended = new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    const status = child.stdio[STATUS_FD] as Readable | null | undefined;
    let said = "";
    status?.setEncoding("utf8");
    status?.on("data", (text: string) => {
      said += text;
      const code = leftCode(said);
      if (code !== null) resolve({ code, signal: null });
    });
  });
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", reject);
  });
  // Later errors (none expected once spawned) must not crash the process.
  child.on("error", () => {});
  const stdout = new OutputBuffer(options.headBytes, options.tailBytes);
  const stderr = new OutputBuffer(options.headBytes, options.tailBytes);
  pipeOutput(child.stdout, stdout, options.redactor);
  pipeOutput(child.stderr, stderr, options.redactor);
  const start = stat !== undefined && Number.isFinite(stat) ? stat : null;
  return { child, pid: child.pid as number, start, stdout, stderr, ended, closed };
}
