// Waiting for the simulator to reach a state: resolve as soon as `check` gives a value (it runs on
// every change), or reject after the timeout with what it saw, so a failed test says why.
import type { TelegramSimState } from "./state.js";

export const DEFAULT_WAIT_MS = 5000;

export function waitUntil<T>(
  state: TelegramSimState,
  check: () => T | undefined,
  describe: () => string,
  timeoutMs = DEFAULT_WAIT_MS,
): Promise<T> {
  const now = check();
  if (now !== undefined) return Promise.resolve(now);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      stop();
      reject(new Error(`${describe()} (waited ${timeoutMs} ms)`));
    }, timeoutMs);
    const stop = state.onChange(() => {
      const value = check();
      if (value === undefined) return;
      clearTimeout(timer);
      stop();
      resolve(value);
    });
  });
}
