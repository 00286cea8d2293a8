// One snapshot or restore at a time per project, across every Tenax process sharing the store
// (gateway, chat, CLI): a promise chain inside the process and a lock file between processes.
import { open, readFile, stat, unlink } from "node:fs/promises";
import type { Clock, Sleep } from "../core/deps.js";
import { TenaxError } from "../core/errors.js";

export interface LockDeps {
  clock: Clock;
  sleep: Sleep;
  /** How long to wait for another process before giving up. */
  timeoutMs: number;
  /** A lock file older than this is taken over even if its process seems alive (pid reuse). */
  staleMs: number;
}

export class ProjectLocks {
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: LockDeps) {}

  /** Run `fn` holding the lock file `file`; calls for the same file run one after another. */
  async with<T>(file: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(file) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.holding(file, fn));
    const tail = run.catch(() => undefined);
    this.chains.set(file, tail);
    try {
      return await run;
    } finally {
      if (this.chains.get(file) === tail) this.chains.delete(file);
    }
  }

  private async holding<T>(file: string, fn: () => Promise<T>): Promise<T> {
    await this.acquire(file);
    try {
      return await fn();
    } finally {
      await unlink(file).catch(() => undefined);
    }
  }

  private async acquire(file: string): Promise<void> {
    const started = this.deps.clock.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const handle = await open(file, "wx", 0o600);
        await handle.writeFile(`${process.pid}\n`);
        await handle.close();
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      // A holder that died leaves its file behind. Two waiters may both judge it stale; git's own
      // index.lock still keeps them from writing the index at the same time.
      if (await this.isStale(file)) {
        await unlink(file).catch(() => undefined);
        continue;
      }
      if (this.deps.clock.now() - started >= this.deps.timeoutMs) {
        throw new TenaxError(
          "checkpoint_busy",
          `another Tenax process has been snapshotting or restoring this project for over ${Math.round(this.deps.timeoutMs / 1000)} s`,
          { hint: `if no Tenax process is running, remove ${file} and try again` },
        );
      }
      await this.deps.sleep(Math.min(25 * 2 ** attempt, 250));
    }
  }

  private async isStale(file: string): Promise<boolean> {
    try {
      const [text, info] = await Promise.all([readFile(file, "utf8"), stat(file)]);
      if (this.deps.clock.now() - info.mtimeMs > this.deps.staleMs) return true;
      const pid = Number.parseInt(text.trim(), 10);
      // An empty file is one being written right now.
      if (!Number.isInteger(pid) || pid <= 0) return false;
      return !isAlive(pid);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
      throw error;
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
