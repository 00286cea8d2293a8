// `tenax up`'s hold on its gateway child: start `tenax gateway run`, learn from the pid file when it
// listens and on which port, and when it exits, follow the restart policy (again at once after a
// clean exit, after a backoff after a crash, never after a crash loop; after a config error, once
// the config it failed on changes). Its state is the `gateway` part of up.json; every change is
// reported through onChange.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Clock, realSleep, type Sleep } from "../../core/deps.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { describeExit, formatWindow, type UpState } from "../../profile/up-state.js";
import { exitCode, type TenaxChild } from "./child.js";
import { type Exit, isCleanExit, type RestartPolicy } from "./restart-policy.js";

export type GatewayState = UpState["gateway"];

export interface GatewaySupervisorOptions {
  paths: ProfilePaths;
  /** The --gateway-host and --gateway-port given to up, passed on to `gateway run`. */
  host?: string;
  port?: string;
  policy: RestartPolicy;
  spawn(args: string[]): TenaxChild;
  clock: Clock;
  sleep?: Sleep;
  /** Run `fn` after `ms`; returns a cancel. */
  after?(ms: number, fn: () => void): () => void;
  onChange(): void;
  /** The gateway will not run again until revived: a crash loop or a config error. */
  onGaveUp(): void;
  /**
   * Call `changed` once the files the gateway's config is read from change; returns a cancel.
   * After a config error the gateway is started again then (without it, only a revive does).
   */
  watchConfig?(changed: (file: string) => void): () => void;
  info(line: string): void;
  warn(line: string): void;
}

const POLL_MS = 100;

const defaultAfter = (ms: number, fn: () => void) => {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
};

export class GatewaySupervisor {
  readonly state: GatewayState;
  private child: TenaxChild | null = null;
  private cancelRestart: (() => void) | null = null;
  private cancelWatch: (() => void) | null = null;
  private stopping = false;
  private readonly sleep: Sleep;
  private readonly after: (ms: number, fn: () => void) => () => void;

  constructor(private readonly options: GatewaySupervisorOptions) {
    this.sleep = options.sleep ?? realSleep;
    this.after = options.after ?? defaultAfter;
    const policy = options.policy.options;
    this.state = {
      state: "starting",
      pid: null,
      pid_start: null,
      // What up was given, from the start: the gateway's address before it binds (port 0: once bound).
      host: options.host ?? null,
      port: options.port === undefined || options.port === "0" ? null : Number(options.port),
      restarts: 0,
      next_restart_at: null,
      last_exit: null,
      unclean_exits: 0,
      max_unclean_exits: policy.maxUnclean,
      window_ms: policy.windowMs,
      gave_up: null,
    };
  }

  start(): void {
    this.launch();
  }

  /**
   * Start the gateway again after up gave up on it (a second `tenax up` asked, or the config it
   * failed on changed: `why`); false if it had not.
   */
  revive(why = "asked to start the gateway again"): boolean {
    if (this.state.state !== "gave_up" || this.stopping) return false;
    this.cancelWatch?.();
    this.cancelWatch = null;
    this.options.policy.reset();
    this.state.gave_up = null;
    this.state.unclean_exits = 0;
    this.state.restarts++;
    this.options.info(`tenax up: ${why} (restart ${this.state.restarts})`);
    this.launch();
    return true;
  }

  /**
   * Stop for good: no more restarts, SIGTERM to the gateway (which drains), and its exit code (the
   * last exit's when none runs). At once, also to a gateway still starting: from the moment its pid
   * file exists it stops through its own handler (the start ends there, the pid file is removed),
   * and before that it has nothing to clean up.
   */
  async stop(): Promise<number> {
    this.stopping = true;
    this.cancelRestart?.();
    this.cancelRestart = null;
    this.cancelWatch?.();
    this.cancelWatch = null;
    const child = this.child;
    this.state.state = "stopping";
    this.state.next_restart_at = null;
    this.options.onChange();
    if (child === null) return this.state.last_exit === null ? 0 : exitCode(this.state.last_exit);
    child.kill("SIGTERM");
    return exitCode(await child.exited);
  }

  /** A second stop signal: the gateway cuts its drain short. */
  hurry(): void {
    this.child?.kill("SIGTERM");
  }

  private launch(): void {
    this.cancelRestart = null;
    const child = this.options.spawn(this.args());
    this.child = child;
    Object.assign(this.state, {
      state: "starting",
      pid: child.pid,
      pid_start: child.start,
      next_restart_at: null,
    });
    this.options.onChange();
    void this.watchListening(child);
    void child.exited.then((exit) => this.exited(child, exit));
  }

  /** `gateway run` with up's flags; with port 0, restarts keep the port the first one bound. */
  private args(): string[] {
    const { host, port } = this.options;
    const keep = port === "0" && this.state.port !== null ? String(this.state.port) : port;
    return [
      "gateway",
      "run",
      ...(host === undefined ? [] : ["--host", host]),
      ...(keep === undefined ? [] : ["--port", keep]),
    ];
  }

  /** The gateway writes its port into its pid file once it listens. */
  private async watchListening(child: TenaxChild): Promise<void> {
    while (child.alive()) {
      const bound = boundAddress(this.options.paths.pid, child.pid);
      if (bound !== null) {
        this.state.host = bound.host;
        this.state.port = bound.port;
        if (this.child === child && this.state.state === "starting") {
          this.state.state = "running";
          this.options.onChange();
        }
        return;
      }
      await this.sleep(POLL_MS);
    }
  }

  private exited(child: TenaxChild, exit: Exit): void {
    if (child !== this.child) return;
    this.child = null;
    const now = this.options.clock.now();
    const pid = this.state.pid;
    this.state.pid = null;
    this.state.pid_start = null;
    this.state.last_exit = { ...exit, at: now, clean: isCleanExit(exit) };
    if (this.stopping) {
      this.options.onChange();
      return;
    }
    const decision = this.options.policy.decide(exit, now);
    this.state.unclean_exits = decision.unclean;
    const { paths } = this.options;
    const up = tenaxCommand(paths.name, ["up"]);
    const was = `the gateway (pid ${pid ?? "?"}) ${describeExit(exit)}`;
    if (decision.action === "give_up") {
      this.state.state = "gave_up";
      this.state.gave_up = { reason: decision.reason, at: now };
      const watch = decision.reason === "config_error" ? this.options.watchConfig : undefined;
      this.options.warn(
        decision.reason !== "config_error"
          ? `${was}, its unclean exit ${decision.unclean} within ${formatWindow(this.state.window_ms)}: tenax up gave up restarting it (a crash loop). Fix what ${join(paths.logs, "gateway.log")} shows, then run: ${up}`
          : watch === undefined
            ? `the gateway cannot start on its configuration (exit ${exit.code}), so tenax up does not restart it. Fix ${paths.config} (${tenaxCommand(paths.name, ["doctor"])} names the problem), then run: ${up}`
            : `the gateway cannot start on its configuration (exit ${exit.code}; its error is above, and on the dashboard): tenax up starts it again once ${paths.config} or ${paths.env} changes`,
      );
      if (watch !== undefined)
        this.cancelWatch = watch((file) => {
          this.cancelWatch = null;
          this.revive(`${file} changed: starting the gateway again`);
        });
      this.options.onChange();
      this.options.onGaveUp();
      return;
    }
    this.state.state = "restarting";
    this.state.next_restart_at = now + decision.delayMs;
    if (decision.clean)
      this.options.info(
        `the gateway (pid ${pid ?? "?"}) stopped cleanly (exit 0) without tenax up asking; starting it again`,
      );
    else
      this.options.warn(
        `${was}; tenax up starts it again in ${Math.round(decision.delayMs / 1000)} s (${decision.unclean} unclean exit(s) within ${formatWindow(this.state.window_ms)}; it gives up at ${this.state.max_unclean_exits})`,
      );
    this.options.onChange();
    this.cancelRestart = this.after(decision.delayMs, () => {
      this.state.restarts++;
      this.options.info(`tenax up: starting the gateway again (restart ${this.state.restarts})`);
      this.launch();
    });
  }
}

/** The address the pid file records for `pid` once that gateway listens, else null. */
function boundAddress(pidFile: string, pid: number | null): { host: string; port: number } | null {
  try {
    const info = JSON.parse(readFileSync(pidFile, "utf8")) as {
      pid?: unknown;
      host?: unknown;
      port?: unknown;
    };
    return info.pid === pid && typeof info.host === "string" && typeof info.port === "number"
      ? { host: info.host, port: info.port }
      : null;
  } catch {
    return null;
  }
}
