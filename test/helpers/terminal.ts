// A real terminal for a command: tmux on a server socket of the test's own (never the user's tmux),
// keys typed into it and the screen read back as a person sees it. Each terminal is killed after
// the test, with its server.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterEach } from "vitest";

const open: Terminal[] = [];

afterEach(() => {
  for (const terminal of open.splice(0)) terminal.kill();
});

/** A word for a shell, quoted as it must be typed. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./=:-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export interface TerminalOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  columns?: number;
  rows?: number;
}

export class Terminal {
  private readonly socket = `tenax-test-${randomBytes(6).toString("hex")}`;
  private killed = false;

  /** `argv` running in a new terminal; it stays open after the command ends, for the last screen. */
  constructor(argv: readonly string[], options: TerminalOptions) {
    const command = `${argv.map(shellWord).join(" ")}; echo "[exited $?]"; sleep 600`;
    this.tmux(
      [
        "new-session",
        "-d",
        "-x",
        String(options.columns ?? 120),
        "-y",
        String(options.rows ?? 40),
        "-c",
        options.cwd,
        command,
      ],
      options.env,
    );
    open.push(this);
  }

  /** Keys as tmux names them ("Enter", "BSpace") or literal text (`literal`). */
  keys(keys: string, literal = true): void {
    this.tmux(["send-keys", "-t", "0", ...(literal ? ["-l"] : []), keys]);
  }

  /** The screen now, one string a row, trailing blanks removed. */
  screen(): string[] {
    return this.tmux(["capture-pane", "-p", "-t", "0"])
      .split("\n")
      .map((row) => row.trimEnd());
  }

  /** Wait until the screen satisfies `what`; the screen at the deadline is in the error. */
  async until(what: (screen: string[]) => boolean, label: string, ms = 15_000): Promise<string[]> {
    const deadline = Date.now() + ms;
    for (;;) {
      const screen = this.screen();
      if (what(screen)) return screen;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${label}; the screen:\n${screen.join("\n")}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  kill(): void {
    if (this.killed) return;
    this.killed = true;
    spawnSync("tmux", ["-L", this.socket, "kill-server"], { stdio: "ignore" });
  }

  private tmux(args: string[], env: NodeJS.ProcessEnv = process.env): string {
    const run = spawnSync("tmux", ["-L", this.socket, ...args], { env, encoding: "utf8" });
    if (run.status !== 0)
      throw new Error(`tmux ${args[0]} failed (exit ${run.status}): ${run.stderr || run.error?.message}`);
    return run.stdout;
  }
}
