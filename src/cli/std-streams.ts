// The process never dies of its own output. A closed stdout or stderr (`tenax gateway run | head
// -1`, a terminal that went away) makes Node emit an 'error' (EPIPE, EIO) on the stream that, with
// nobody listening, ends the process: a gateway would drop its turns and leave its pid file. Here
// every such error is heard, that stream is written no more, and the process goes on.

export type StreamName = "stdout" | "stderr";
type LostListener = (name: StreamName, error: Error) => void;

const lost = new Map<StreamName, Error>();
const listeners = new Set<LostListener>();
let guarded = false;

/** Listen for errors on stdout and stderr, once per process (later calls do nothing). */
export function guardStandardStreams(): void {
  if (guarded) return;
  guarded = true;
  for (const name of ["stdout", "stderr"] as const)
    process[name].on("error", (error: Error) => markLost(name, error));
}

/**
 * Write to stdout or stderr unless it was lost. A file or a full disk behind the stream can also
 * throw at once (Node writes to files synchronously): that too only marks it lost.
 */
export function writeStd(name: StreamName, text: string): void {
  const stream = process[name];
  if (lost.has(name) || !stream.writable) return;
  try {
    stream.write(text);
  } catch (error) {
    markLost(name, error instanceof Error ? error : new Error(String(error)));
  }
}

/** Be told (once per stream) when stdout or stderr is lost; returns the unsubscribe. */
export function onStandardStreamLost(listener: LostListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function markLost(name: StreamName, error: Error): void {
  if (lost.has(name)) return;
  lost.set(name, error);
  for (const listener of listeners) listener(name, error);
}
