// The children `tenax up` starts (the gateway, the dashboard) get a pipe from up on their stdin that
// nothing writes to: when up ends in any way, kill -9 included, the kernel closes its end, the
// child reads end-of-file and stops by itself, so no child outlives the up that started it.

/** Set to "1" by `tenax up` in the environment of each child it starts. */
export const PARENT_PIPE_ENV = "TENAX_UP_PIPE";

export interface ParentPipe {
  /** Resolves once up's end of the pipe has closed (up has ended). */
  closed: Promise<void>;
  /** Stop reading stdin, which would otherwise keep this process alive after its work is done. */
  release(): void;
}

/**
 * The pipe from `tenax up` when this process was started by it, else null. The variable is removed
 * from this process's environment, so the processes it starts in turn (a tool's command, say) do
 * not take up's pipe for theirs.
 */
export function parentPipe(
  env: NodeJS.ProcessEnv = process.env,
  stdin: NodeJS.ReadStream = process.stdin,
): ParentPipe | null {
  if (env[PARENT_PIPE_ENV] !== "1") return null;
  delete env[PARENT_PIPE_ENV];
  const closed = new Promise<void>((resolve) => {
    stdin.once("end", () => resolve());
    stdin.once("close", () => resolve());
    // A read error on the pipe means the same: up is no longer there.
    stdin.once("error", () => resolve());
  });
  // Nothing is ever written; reading is only how the end of the pipe is noticed.
  stdin.on("data", () => undefined);
  stdin.resume();
  return { closed, release: () => stdin.destroy() };
}
