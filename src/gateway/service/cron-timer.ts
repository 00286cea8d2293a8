// The systemd --user timer that runs `tenax cron tick` every minute for one profile, for when no
// gateway runs: the timer unit, the oneshot service it starts, their names and their text.
// A gateway and this timer together are safe: each occurrence is claimed in the store once,
// whoever ticks first.
import { DEFAULT_PROFILE, type ProfilePaths } from "../../profile/paths.js";
import { tenaxBin } from "../../profile/tenax-process.js";
import { escapeSpecifiers, quoteArg } from "./unit.js";

/** The least time systemd lets one tick run before it stops it (a backstop; runs have their own timeouts). */
export const TICK_TIMEOUT_FLOOR_S = 3600;
/** Seconds past the configured cron.default_timeout that a tick may take (start-up, delivery). */
export const TICK_MARGIN_S = 300;

export interface CronTimerNames {
  service: string;
  timer: string;
}

/** `tenax-cron.service`/`.timer` for the default profile, `tenax-cron-NAME.service`/`.timer` for the others. */
export function cronTimerNames(profile: string): CronTimerNames {
  const base = profile === DEFAULT_PROFILE ? "tenax-cron" : `tenax-cron-${profile}`;
  return { service: `${base}.service`, timer: `${base}.timer` };
}

export interface CronServiceOptions {
  paths: ProfilePaths;
  /** The config's cron.default_timeout, in seconds. */
  defaultTimeoutS: number;
  nodePath?: string;
  binPath?: string;
}

/** The longest one tick may run: an hour, or the default run timeout plus a margin when that is longer. */
export function tickTimeoutS(defaultTimeoutS: number): number {
  return Math.max(TICK_TIMEOUT_FLOOR_S, Math.ceil(defaultTimeoutS) + TICK_MARGIN_S);
}

export function renderCronService(options: CronServiceOptions): string {
  const { paths } = options;
  const node = options.nodePath ?? process.execPath;
  const bin = options.binPath ?? tenaxBin();
  const profileArgs = paths.name === DEFAULT_PROFILE ? [] : ["--profile", paths.name];
  const exec = [node, bin, ...profileArgs, "cron", "tick"].map((word) => quoteArg(word)).join(" ");
  const { timer } = cronTimerNames(paths.name);
  return [
    "# Written by `tenax gateway install --cron-timer`; `tenax gateway uninstall` removes it.",
    `# ${timer} starts it every minute; it runs the cron jobs that are due once, then exits.`,
    "# While one tick still runs, the timer starts no second one.",
    "[Unit]",
    `Description=Tenax cron tick (profile ${paths.name})`,
    "After=network-online.target",
    "Wants=network-online.target",
    "",
    "[Service]",
    "Type=oneshot",
    `WorkingDirectory=${escapeSpecifiers(paths.dir)}`,
    `Environment=${quoteArg(`TENAX_HOME=${paths.home}`, false)}`,
    "UnsetEnvironment=TENAX_PROFILE",
    `ExecStart=${exec}`,
    "# A backstop for a tick that hangs: each run already ends at its own timeout.",
    `TimeoutStartSec=${tickTimeoutS(options.defaultTimeoutS)}`,
    "KillSignal=SIGTERM",
    "",
  ].join("\n");
}

export function renderCronTimer(profile: string): string {
  const { service } = cronTimerNames(profile);
  return [
    "# Written by `tenax gateway install --cron-timer`; `tenax gateway uninstall` removes it.",
    "[Unit]",
    `Description=Tenax cron tick every minute (profile ${profile})`,
    "",
    "[Timer]",
    "OnCalendar=*-*-* *:*:00",
    "AccuracySec=1s",
    "# No catch-up start from systemd after the machine was off: the next tick applies Tenax's",
    "# missed-run rule (the newest missed occurrence within its grace window runs once if the job's",
    "# catch_up allows; the rest are recorded as skipped).",
    "Persistent=false",
    `Unit=${service}`,
    "",
    "[Install]",
    "WantedBy=timers.target",
    "",
  ].join("\n");
}
