// What a test opened (child processes, registries, locks, stores, clients, servers), closed after
// it, the last opened first, so nothing a test started outlives it even when the test fails.
import type { ChildProcess } from "node:child_process";
import { afterEach } from "vitest";

export interface Opened {
  /** Close `thing` with `close` after the test; returns `thing`. */
  add<T>(thing: T, close: (thing: T) => unknown): T;
  /** A child process, killed with SIGKILL after the test. */
  child<C extends ChildProcess>(child: C): C;
}

/** For a test file: every closer added during a test runs after it; a failing one fails the hook. */
export function closeAfterEach(): Opened {
  const closers: (() => unknown)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  const add = <T>(thing: T, close: (thing: T) => unknown): T => {
    closers.push(() => close(thing));
    return thing;
  };
  return { add, child: (child) => add(child, (c) => c.kill("SIGKILL")) };
}
