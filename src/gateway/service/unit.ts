// The systemd --user unit that runs one profile's gateway: its name, where it lives, and its text.
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { DEFAULT_PROFILE, type ProfilePaths } from "../../profile/paths.js";
import { tenaxBin } from "../../profile/tenax-process.js";
import { GATEWAY_EXITS_NOT_RESTARTED } from "./exit-codes.js";

/** Seconds systemd waits past the configured drain before it kills the gateway. */
export const STOP_MARGIN_S = 15;

/** `tenax-gateway.service` for the default profile, `tenax-gateway-NAME.service` for the others. */
export function unitName(profile: string): string {
  return profile === DEFAULT_PROFILE ? "tenax-gateway.service" : `tenax-gateway-${profile}.service`;
}

/** `$XDG_CONFIG_HOME/systemd/user` (an absolute XDG_CONFIG_HOME only, as the spec says), else ~/.config/systemd/user. */
export function unitDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(env.HOME || homedir(), ".config");
  return join(base, "systemd", "user");
}

export interface UnitOptions {
  paths: ProfilePaths;
  /** The config's gateway.drain_timeout, in seconds. */
  drainTimeoutS: number;
  nodePath?: string;
  binPath?: string;
}

export function renderUnit(options: UnitOptions): string {
  const { paths } = options;
  const node = options.nodePath ?? process.execPath;
  const bin = options.binPath ?? tenaxBin();
  const profileArgs = paths.name === DEFAULT_PROFILE ? [] : ["--profile", paths.name];
  const exec = [node, bin, ...profileArgs, "gateway", "run"].map((word) => quoteArg(word)).join(" ");
  const stopS = Math.ceil(options.drainTimeoutS) + STOP_MARGIN_S;
  return [
    "# Written by `tenax gateway install`; `tenax gateway uninstall` removes it.",
    "[Unit]",
    `Description=Tenax gateway (profile ${paths.name})`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=simple",
    `WorkingDirectory=${escapeSpecifiers(paths.dir)}`,
    `Environment=${quoteArg(`TENAX_HOME=${paths.home}`, false)}`,
    "UnsetEnvironment=TENAX_PROFILE",
    `ExecStart=${exec}`,
    "Restart=on-failure",
    "RestartSec=2",
    `RestartPreventExitStatus=${GATEWAY_EXITS_NOT_RESTARTED.join(" ")}`,
    "KillSignal=SIGTERM",
    `TimeoutStopSec=${stopS}`,
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
}

/** `%` starts a specifier in unit files; `%%` is a literal one. */
export function escapeSpecifiers(value: string): string {
  return value.replaceAll("%", "%%");
}

/**
 * One word of an ExecStart= line (or, with `dollars` false, of an Environment= line, which does
 * not expand `$`), double-quoted with C escapes when it needs it.
 */
export function quoteArg(arg: string, dollars = true): string {
  const specifiers = escapeSpecifiers(arg);
  const escaped = dollars ? specifiers.replaceAll("$", "$$$$") : specifiers;
  if (/^[A-Za-z0-9_\-./=:@%+,$]+$/.test(escaped)) return escaped;
  return `"${escaped.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}
