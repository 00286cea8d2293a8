// Config and profile tests: a throwaway TENAX_HOME with a config.yaml in it, and ways to catch a
// TenaxError. Built on tmp.ts, which removes the folders after each test.
import { mkdirSync, writeFileSync } from "node:fs";
import { TenaxError } from "../../src/core/errors.js";
import { DEFAULT_PROFILE, type ProfilePaths, profilePaths } from "../../src/profile/paths.js";
import { tempDir } from "./tmp.js";

/** A fresh temp folder to use as TENAX_HOME (never the real home), removed after the test. */
export function tempHome(): string {
  return tempDir("tenax-");
}

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
