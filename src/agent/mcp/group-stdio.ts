// The stdio transport for an MCP server Tenax starts: the SDK's own cannot put the server in a
// process group of its own, and a server started through `npx` or `uvx` is a tree of processes, of
// which ending the first leaves the rest running. Here the server leads its own group (so `close`
// ends all of it), carries the profile's marks (process-marks.ts: a crashed gateway's servers are
// found and ended by the next start), keeps the tail of what it printed on stderr for the error
// that says why it stopped, and reads JSON-RPC lines with the SDK's own buffer.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { killGroup } from "../process-group.js";

export interface GroupStdioOptions {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd: string;
  /** How long the server has to end after its stdin closes and SIGTERM, before SIGKILL. */
  graceMs: number;
}

/** Lines of stderr kept to say why a server stopped. */
const STDERR_LINES = 20;
const STDERR_LINE_CHARS = 500;

export class GroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private child: ChildProcess | null = null;
  private readonly buffer = new ReadBuffer();
  private readonly stderrLines: string[] = [];
  private partial = "";
  private closing: Promise<void> | null = null;
  /** How the process ended ("exit code 1", "signal SIGKILL"), once it has. */
  exit: string | null = null;

  constructor(private readonly options: GroupStdioOptions) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** The last lines the server wrote to stderr, newest last. */
  stderrTail(): string {
    const lines = this.partial === "" ? this.stderrLines : [...this.stderrLines, this.partial];
    return lines.join("\n").trim();
  }

  start(): Promise<void> {
    const { command, args, env, cwd } = this.options;
    return new Promise((resolve, reject) => {
      const child = spawn(command, [...args], { env, cwd, stdio: ["pipe", "pipe", "pipe"], detached: true });
      this.child = child;
      child.once("error", (error) => {
        reject(describeSpawnError(error, command, cwd, env));
        this.onerror?.(error);
      });
      child.once("spawn", () => resolve());
      child.once("close", (code, signal) => {
        this.exit = signal === null ? `exit code ${code}` : `signal ${signal}`;
        this.onclose?.();
      });
      child.stdin.on("error", (error) => this.onerror?.(error));
      child.stdout.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (error) {
            // A line that is not JSON-RPC (a server logging to stdout): said, and skipped.
            this.onerror?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stderr.setEncoding("utf8");
      child.stderr.on("data", (text: string) => this.keepStderr(text));
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed || this.exit !== null)
      return Promise.reject(new Error("the server is not running"));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Ends the server and everything it started: stdin closed, then its whole group TERM, then KILL. */
  close(): Promise<void> {
    this.closing ??= this.end();
    return this.closing;
  }

  private async end(): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined) return;
    child.stdin?.end();
    await killGroup(child.pid, { graceMs: this.options.graceMs });
    this.buffer.clear();
  }

  private keepStderr(text: string): void {
    const lines = (this.partial + text).split("\n");
    this.partial = (lines.pop() ?? "").slice(-STDERR_LINE_CHARS);
    for (const line of lines) {
      if (line.trim() === "") continue;
      this.stderrLines.push(line.slice(0, STDERR_LINE_CHARS));
      if (this.stderrLines.length > STDERR_LINES) this.stderrLines.shift();
    }
  }
}

function describeSpawnError(
  error: NodeJS.ErrnoException,
  command: string,
  cwd: string,
  env: Record<string, string>,
): Error {
  if (error.code === "ENOENT")
    return new Error(
      existsSync(cwd)
        ? `cannot run "${command}": no such command in PATH (${env.PATH ?? "unset"}); give its full path`
        : `cannot run "${command}": its folder ${cwd} (cwd) does not exist`,
    );
  if (error.code === "EACCES") return new Error(`cannot run "${command}": permission denied`);
  return new Error(`cannot run "${command}": ${error.message}`);
}
