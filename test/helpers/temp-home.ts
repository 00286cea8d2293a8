// Shared by tests: throwaway TENAX_HOME folders (never the real home) and ways to catch a TenaxError.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import { DEFAULT_PROFILE, type ProfilePaths, profilePaths } from "../../src/config/paths.js";
import { TenaxError } from "../../src/core/errors.js";

const homes: string[] = [];

/** A fresh temp folder to use as TENAX_HOME, removed after the test. */
export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), "tenax-"));
  homes.push(home);
  return home;
}

afterEach(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true });
});

/** A profile in a fresh home, with config.yaml (and .env) written when given. */
export function profileWith(config?: string, dotenv?: string, name = DEFAULT_PROFILE): ProfilePaths {
  const paths = profilePaths(tempHome(), name);
  mkdirSync(paths.dir, { recursive: true });
  if (config !== undefined) writeFileSync(paths.config, config, { mode: 0o600 });
  if (dotenv !== undefined) writeFileSync(paths.env, dotenv, { mode: 0o600 });
  return paths;
}

/** Run `fn`, expect it to throw a TenaxError, and return that error. */
export function thrown(fn: () => unknown): TenaxError {
  try {
    fn();
  } catch (error) {
    if (TenaxError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected an error, but none was thrown");
}

/** Like `thrown`, for async functions. */
export async function rejected(fn: () => Promise<unknown>): Promise<TenaxError> {
  try {
    await fn();
  } catch (error) {
    if (TenaxError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected an error, but none was thrown");
}
