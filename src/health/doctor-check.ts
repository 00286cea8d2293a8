// One check of `tenax doctor`, and what the checks are given: the seams (versions of outside
// programs, port probes, the store's writer, the clock) that tests replace.
import type { StorePort } from "../store/port.js";

export type CheckStatus = "ok" | "warn" | "fail";

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  /** The command to run next, when the check is not ok. */
  next?: string;
  /** What `--fix` would do about it. */
  fix?: string;
  /** What `--fix` did. */
  fixed?: string;
}

export interface DoctorDeps {
  /** The output of `command --version`, or null when it cannot run. */
  version(command: string): string | null;
  /**
   * Try to bind a TCP port on the host right now: null when it could, else why not (a BindError
   * when its cause is known: the port in use, or a host that is no address of this machine).
   */
  tryBind(host: string, port: number): Promise<unknown>;
  /** Run with the profile's writer (opened only when no gateway holds the profile). */
  withWriter<T>(body: (store: StorePort) => Promise<T>): Promise<T>;
  env: NodeJS.ProcessEnv;
  now(): number;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
