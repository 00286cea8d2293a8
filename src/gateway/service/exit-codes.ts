// The exit codes the gateway process ends with that its service unit depends on.

/**
 * A gateway that cannot start because its configuration is wrong exits with this code
 * (EX_CONFIG from sysexits.h). The systemd unit lists it in RestartPreventExitStatus=, so systemd
 * does not restart a gateway in a loop that would fail the same way every time.
 */
export const GATEWAY_EXIT_CONFIG_ERROR = 78;
