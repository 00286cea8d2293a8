// What the process registry (processes.ts) takes and gives: its options, how a command is started,
// what is known of a running command, and the handle its starter holds.
import type { ProfileSecrets } from "../config/profile-secrets.js";
import type { Clock, Sleep } from "../core/deps.js";
import type { ProcessLedger } from "./process-ledger.js";
import type { CommandSandbox } from "./sandbox/sandbox.js";

export interface ProcessRegistryOptions {
  /** Time a group has after SIGTERM before SIGKILL. */
  graceMs?: number;
  /** Kept per stream: the first bytes and a ring of the latest. */
  headBytes?: number;
  tailBytes?: number;
  /** At most this many bytes per stream in one poll. */
  pollBytes?: number;
  /** Finished processes kept for a last poll; past this the oldest are forgotten. */
  maxFinished?: number;
  clock?: Clock;
  sleep?: Sleep;
  /**
   * The profile's secrets: commands do not inherit them, and their output is kept with them
   * redacted. By default only TENAX_API_KEY is kept from commands.
   */
  secrets?: ProfileSecrets;
  /** The profile's folder, written in every command's mark. */
  profile?: string;
  /** Names of this process's variables commands inherit beyond the base list (tools.exec.env). */
  envAllow?: readonly string[];
  /** Where the commands that run are recorded durably (the agent's store). */
  ledger?: ProcessLedger;
  /** Where commands run (tools.exec.sandbox); straight on the machine when null. */
  sandbox?: CommandSandbox | null;
}

export interface StartOptions {
  cwd: string;
  taskId: string;
  env?: Record<string, string>;
  /** A terminal call waiting for this command; it turns background if it leaves processes behind. */
  foreground?: boolean;
}

export interface ProcessInfo {
  id: string;
  task_id: string;
  command: string;
  cwd: string;
  pid: number;
  foreground: boolean;
  /** Running while any process of its group lives, even after the shell itself exited. */
  status: "running" | "exited";
  /** The shell's exit code and signal, null until it exited. */
  exit_code: number | null;
  signal: string | null;
  started_at: string;
  ended_at: string | null;
  output_bytes: { stdout: number; stderr: number };
}

export interface PollResult extends ProcessInfo {
  /** Output since this reader's last poll. */
  stdout: string;
  stderr: string;
  omitted_bytes?: { stdout: number; stderr: number };
}

export interface KillResult extends ProcessInfo {
  /** False when something of the group survived even SIGKILL. */
  killed: boolean;
}

/** A running command as its starter holds it: valid even after a cleanup forgot the process. */
export interface ProcessHandle {
  readonly id: string;
  info(): ProcessInfo;
  alive(): boolean;
  /** Resolves true when the shell exits, false if `signal` fires first. */
  waitForExit(signal: AbortSignal): Promise<boolean>;
  /** Waits up to `ms` for the output pipes to close after the shell exited; true if they did. */
  settle(ms: number): Promise<boolean>;
  /** All output from the start, head and tail when longer than maxBytes a stream. */
  output(maxBytes: number): {
    stdout: string;
    stderr: string;
    omitted_bytes: { stdout: number; stderr: number };
  };
  kill(): Promise<KillResult>;
  /** A foreground command that left processes behind: they stay, as a background process. */
  keepInBackground(): ProcessInfo;
  /** Drops the process from the registry once nothing of it is alive. */
  forget(): void;
}
