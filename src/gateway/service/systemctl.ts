// Running `systemctl --user` (execFile, never a shell) and reading a unit's state from `show`.
import { execFile } from "node:child_process";
import { commandLine, TenaxError } from "../../core/errors.js";

export interface SystemctlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `systemctl --user ARGS...`; rejects only when systemd is not there to talk to. */
export type Systemctl = (args: readonly string[]) => Promise<SystemctlResult>;

/** The messages systemctl prints when there is no user manager to talk to. */
const NO_BUS_RE =
  /Failed to connect to (user scope )?bus|Failed to get D-Bus connection|\$DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR|System has not been booted with systemd/i;

const UNAVAILABLE = "systemd_unavailable";

export function systemdUnavailable(detail: string): TenaxError {
  return new TenaxError(UNAVAILABLE, `systemd --user is not available here (${detail})`, {
    hint: [
      "Run the gateway in the foreground instead: tenax gateway run",
      "Or, on a systemd machine where you log in without a user session (ssh, a container), let your",
      "user manager run without a login: sudo loginctl enable-linger $USER, then log in again.",
    ].join("\n"),
  });
}

export function createSystemctl(env: NodeJS.ProcessEnv = process.env, timeoutMs = 30_000): Systemctl {
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(
        "systemctl",
        ["--user", ...args],
        { env, timeout: timeoutMs, encoding: "utf8" },
        (error, stdout, stderr) => {
          const errno = error as NodeJS.ErrnoException | null;
          if (errno?.code === "ENOENT") {
            reject(systemdUnavailable("no systemctl command on PATH"));
            return;
          }
          if (errno !== null && typeof errno.code !== "number") {
            reject(
              new TenaxError("systemctl_failed", `systemctl --user ${args.join(" ")}: ${errno.message}`),
            );
            return;
          }
          const code = typeof errno?.code === "number" ? errno.code : 0;
          if (code !== 0 && NO_BUS_RE.test(stderr)) {
            reject(systemdUnavailable(stderr.trim().split("\n")[0] ?? "cannot reach the user manager"));
            return;
          }
          resolve({ code, stdout, stderr });
        },
      );
    });
}

/** Run and require success; the error carries what systemctl said. */
export async function systemctlOk(systemctl: Systemctl, args: readonly string[]): Promise<SystemctlResult> {
  const result = await systemctl(args);
  if (result.code !== 0) {
    const said = result.stderr.trim() || result.stdout.trim() || `exit ${result.code}`;
    throw new TenaxError("systemctl_failed", `systemctl --user ${args.join(" ")} failed: ${said}`);
  }
  return result;
}

export interface UnitState {
  /** `loaded`, or `not-found` when the unit file is not installed. */
  loadState: string;
  activeState: string;
  subState: string;
  /** 0 when no process runs. */
  mainPid: number;
  /** Automatic restarts systemd has made. */
  restarts: number;
  /** The last main process's exit status. */
  exitStatus: number;
}

export const SHOW_PROPERTIES = "LoadState,ActiveState,SubState,MainPID,NRestarts,ExecMainStatus";

export function parseShow(text: string): UnitState {
  const values = new Map<string, string>();
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) values.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  const num = (key: string) => {
    const n = Number(values.get(key) ?? "0");
    return Number.isFinite(n) ? n : 0;
  };
  return {
    loadState: values.get("LoadState") ?? "unknown",
    activeState: values.get("ActiveState") ?? "unknown",
    subState: values.get("SubState") ?? "unknown",
    mainPid: num("MainPID"),
    restarts: num("NRestarts"),
    exitStatus: num("ExecMainStatus"),
  };
}

export async function unitState(systemctl: Systemctl, unit: string): Promise<UnitState> {
  const result = await systemctlOk(systemctl, ["show", unit, "-p", SHOW_PROPERTIES]);
  return parseShow(result.stdout);
}

/**
 * The unit's state, or why systemd --user cannot be asked: for what needs no systemd to answer
 * (status, which also knows a gateway run by tenax up or by hand).
 */
export async function unitStateIfAvailable(
  systemctl: Systemctl,
  unit: string,
): Promise<{ state: UnitState } | { unavailable: TenaxError }> {
  try {
    return { state: await unitState(systemctl, unit) };
  } catch (error) {
    if (TenaxError.isInstance(error) && error.code === UNAVAILABLE) return { unavailable: error };
    throw error;
  }
}

/** Running: active with a main process. */
export function isRunning(state: UnitState): boolean {
  return state.activeState === "active" && state.mainPid > 0;
}

/** The commands that show why a unit did not stay up, exactly as a shell takes them. */
export function diagnosisCommands(unit: string): string[] {
  return [
    commandLine(["journalctl", "--user", "-u", unit, "-n", "50", "--no-pager"]),
    commandLine(["systemctl", "--user", "status", unit]),
  ];
}
