// The exit codes the gateway process ends with that its service unit and `tenax up` depend on.

/**
 * A gateway that cannot start because its configuration is wrong exits with this code
 * (EX_CONFIG from sysexits.h).
 */
export const GATEWAY_EXIT_CONFIG_ERROR = 78;

/**
 * The CLI's usage error: a bad flag, or a setting the gateway refuses to start with (auth: none on
 * a public address). Like a config error, it fails the same way every time.
 */
export const GATEWAY_EXIT_USAGE_ERROR = 2;

/**
 * The exits that restarting cannot fix: the systemd unit lists them in RestartPreventExitStatus=,
 * `tenax up` never restarts after them, and both report them as a configuration error.
 */
export const GATEWAY_EXITS_NOT_RESTARTED: readonly number[] = [
  GATEWAY_EXIT_USAGE_ERROR,
  GATEWAY_EXIT_CONFIG_ERROR,
];

export function isConfigErrorExit(code: number | null | undefined): boolean {
  return code !== null && code !== undefined && GATEWAY_EXITS_NOT_RESTARTED.includes(code);
}
