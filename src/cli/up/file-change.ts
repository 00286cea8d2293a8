// Waiting for files to change: how `tenax up` knows that the config a gateway could not start on
// (config.yaml, .env) was edited, so it starts the gateway again by itself: a poll of each file's
// signature (profile/file-signature.ts), never of its contents.
import { fileSignature } from "../../profile/file-signature.js";

export interface Ticker {
  every(ms: number, tick: () => void): { cancel(): void };
}

export const realTicker: Ticker = {
  every: (ms, tick) => {
    const timer = setInterval(tick, ms);
    timer.unref();
    return { cancel: () => clearInterval(timer) };
  },
};

/**
 * Call `onChange` once, the first time any of `files` differs from how it is now; returns a cancel.
 * Checked every `intervalMs` (default 500 ms).
 */
export function onceChanged(
  files: readonly string[],
  onChange: (file: string) => void,
  options: { intervalMs?: number; ticker?: Ticker } = {},
): () => void {
  const before = new Map(files.map((file) => [file, fileSignature(file)]));
  const ticker = options.ticker ?? realTicker;
  const timer = ticker.every(options.intervalMs ?? 500, () => {
    const changed = files.find((file) => fileSignature(file) !== before.get(file));
    if (changed === undefined) return;
    timer.cancel();
    onChange(changed);
  });
  return () => timer.cancel();
}
