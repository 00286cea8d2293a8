// A gateway process from start to stop: the pid file, the clean-shutdown marker, the agent, the
// port, and the signals. SIGTERM/SIGINT (or the end of `tenax up`, through `stopWhen`) stop new
// turns, tell open streams, drain up to
// gateway.drain_timeout, interrupt the rest, close agent and store, and mark a clean stop only
// when the drain completed.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { reapedByOthers } from "../agent/reap.js";
import { type ResumeOptions, type ResumeReport, resumeInterrupted } from "../agent/resume.js";
import { openAgent } from "../agent/setup.js";
import { startWatchdog } from "../agent/watchdog.js";
import type { GatewayLaunch } from "../config/gateway-pid.js";
import type { ProfilePaths } from "../config/paths.js";
import type { TenaxConfig } from "../config/schema.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import { createJsonServer } from "../core/http.js";
import type { RotatingLog } from "../core/log-file.js";
import type { StoreSettings } from "../store/registry.js";
import { Gateway, type TurnWatcher } from "./gateway.js";
import { gatewayLog, startObservability } from "./observability.js";
import { acquirePidFile } from "./pid-file.js";
import { RunRegistry } from "./runs.js";
import { runRoutes } from "./runs-http.js";

export interface RunGatewayOptions {
  paths: ProfilePaths;
  config: TenaxConfig;
  host: string;
  port: number;
  version: string;
  storeSettings: StoreSettings;
  cwd: string;
  /** How it was started; recorded in the pid file for the advice shown when it is down. */
  launch?: GatewayLaunch;
  /** Resolves (with why) when the gateway should drain and stop as on SIGTERM: `tenax up` is gone. */
  stopWhen?: Promise<string>;
  /** Lines for the operator (stdout). */
  info(line: string): void;
  warn(line: string): void;
}

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** Serve until a signal stops the gateway; resolves with the exit code. */
export async function runGateway(options: RunGatewayOptions): Promise<number> {
  // Every operator line also goes to logs/gateway.log, which rotates at logs.max_mb; so does the
  // error a gateway dies of, which is where `tenax up` sends people after a crash loop.
  const log = gatewayLog(options.paths, options.config);
  try {
    return await serve(options, log);
  } catch (error) {
    log.write("error", `the gateway stopped on an error: ${errorMessage(error)}`);
    throw error;
  } finally {
    log.close();
  }
}

async function serve(options: RunGatewayOptions, log: RotatingLog): Promise<number> {
  const { paths, config, host } = options;
  const info = (line: string) => {
    options.info(line);
    log.write("info", line);
  };
  const warn = (line: string) => {
    options.warn(line);
    log.write("warn", line);
  };
  if (!isLoopback(host) && config.gateway.api_key === undefined) {
    throw new TenaxError(
      "gateway_unprotected",
      `refusing to serve on ${host} without an API key: anyone who can reach it could run the agent`,
      {
        hint: "set gateway.api_key in config.yaml (for example from the TENAX_API_KEY variable), or serve on 127.0.0.1",
        exitCode: 2,
      },
    );
  }
  const lock = acquirePidFile(
    paths.pid,
    { pid: process.pid, started_at: Date.now(), ...options.launch },
    paths.name,
  );
  if (lock.reclaimed !== null)
    warn(`reclaimed the pid file of gateway pid ${lock.reclaimed}, which is no longer running`);
  try {
    const clean = existsSync(paths.cleanShutdown);
    rmSync(paths.cleanShutdown, { force: true });
    info(
      clean
        ? "the last gateway stop was clean"
        : "no clean-shutdown marker: the last gateway stop was not clean (or this is the first start)",
    );
    // Opening reaps the turns a stopped process left running; they are resumed once the gateway exists.
    const opened = await openAgent(paths, config, { storeSettings: options.storeSettings });
    // A command that opened the store between the crash and now (`tenax chat`) may have reaped the
    // crashed gateway's turns first; they are still this gateway's to resume.
    const reapedElsewhere =
      lock.crashed === null ? [] : reapedByOthers(opened.store, lock.crashed, opened.reaped);
    for (const turn of reapedElsewhere)
      info(
        `turn ${turn.turn_id} of session ${turn.session_id} was running in the gateway that stopped (pid ${lock.crashed?.pid}) and was marked interrupted by another process since`,
      );
    if (opened.agent.runtime.builtIn)
      warn(
        "no provider is configured, so the built-in local simulator answers (it echoes); set model and providers in config.yaml for a real model",
      );
    const startedAt = Date.now();
    let address: string | null = null;
    const observed = startObservability({
      paths,
      config,
      store: opened.store,
      scheduler: opened.agent.scheduler,
      log,
      // `gateway` is made just below; the monitor reads it only when asked.
      gateway: () => ({
        stopping: gateway.isStopping,
        turnsInFlight: gateway.turnsInFlight,
        maxTurns: config.gateway.max_turns,
        startedAt,
        address,
      }),
    });
    const gateway = new Gateway({
      agent: opened.agent,
      store: opened.store,
      config,
      version: options.version,
      cwd: options.cwd,
      health: observed.routes,
      onTurnEvent: (sessionId, event) => observed.routes.onTurnEvent(sessionId, event),
      // The runs API; `runs` is made just below, before the port opens.
      routes: (req, res, path, url) => routes(req, res, path, url),
    });
    const runs = new RunRegistry({
      store: opened.store,
      gateway,
      retentionMs: config.gateway.run_retention_hours * 3_600_000,
      onError: (what, error) => warn(`runs API: ${what} failed: ${(error as Error).message}`),
    });
    const routes = runRoutes(runs);
    // Before the runs are recovered: a run whose turn is resumed follows it instead of ending.
    const lifecycle: ResumeOptions<TurnWatcher> = {
      agent: opened.agent,
      reaped: [...opened.reaped, ...reapedElsewhere],
      host: gateway,
      autoResume: config.gateway.auto_resume,
      cwd: options.cwd,
      watcherFor: (turnId, sessionId) => runs.watcherFor(turnId, sessionId),
      onEvent: (event) => {
        (event.type === "turn_resumed" ? info : warn)(event.message);
        const { type, layer, session_id, message, ...data } = event;
        observed.hub.publish({ type, layer, session_id, message, data });
      },
    };
    reportResume(await resumeInterrupted(lifecycle), config.gateway.auto_resume, warn);
    startWatchdog({ ...lifecycle, onResume: (r) => reportResume(r, config.gateway.auto_resume, warn) });
    const settledRuns = await runs.recover();
    if (settledRuns > 0) info(`${settledRuns} run(s) left running by the last gateway were settled`);
    runs.maintainOn(opened.agent.scheduler);
    const server = createJsonServer(gateway.handle);
    // Listen for the stop signals before anyone can learn the address, so no signal finds the
    // process without its handler (and dies without draining or removing its pid file).
    const stopSignal = new Promise<string>((resolve) => {
      process.once("SIGTERM", () => resolve("SIGTERM"));
      process.once("SIGINT", () => resolve("SIGINT"));
      void options.stopWhen?.then(resolve);
    });
    try {
      await listen(server, host, options.port);
    } catch (error) {
      await observed.close();
      await opened.close();
      throw error;
    }
    const bound = (server.address() as AddressInfo).port;
    await lock.update({ pid: process.pid, started_at: Date.now(), host, port: bound, ...options.launch });
    const shown = host.includes(":") ? `[${host}]` : host;
    address = `http://${shown}:${bound}`;
    observed.hub.publish({
      type: "gateway_started",
      layer: "lifecycle",
      message: `gateway listening on ${address}`,
    });
    info(`gateway listening on http://${shown}:${bound}`);

    const signal = await stopSignal;
    info(
      `${signal}: stopping; no new turns, draining ${gateway.turnsInFlight} running turn(s) for up to ${config.gateway.drain_timeout}s`,
    );
    observed.hub.publish({
      type: "shutdown",
      layer: "lifecycle",
      message: `${signal}: the gateway is stopping`,
    });
    gateway.beginShutdown();
    // A second signal means "stop now": the drain is cut short and what runs is interrupted.
    const now = new AbortController();
    const again = (second: NodeJS.Signals) => {
      info(`${second} again: interrupting the running turns now`);
      now.abort();
    };
    process.on("SIGTERM", again);
    process.on("SIGINT", again);
    const drained = await gateway.drain(config.gateway.drain_timeout * 1000, now.signal);
    if (!drained) {
      const left = await gateway.interruptAll();
      warn(
        `the drain timed out: ${left} turn(s) interrupted and saved; they can be continued with X-Session-Id`,
      );
    }
    // Every run's terminal event is committed (and sent to its followers) before the store closes.
    await runs.settled();
    await observed.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await opened.close();
    if (drained) writeFileSync(paths.cleanShutdown, `${new Date().toISOString()}\n`, { mode: 0o600 });
    info(drained ? "gateway stopped cleanly" : "gateway stopped after interrupting turns (not a clean stop)");
    return 0;
  } finally {
    lock.release();
  }
}

/** One line per interrupted turn that was neither resumed nor suspended, and why. */
function reportResume(report: ResumeReport, autoResume: boolean, warn: (line: string) => void): void {
  for (const turn of report.skipped)
    warn(
      `turn ${turn.turn_id} of session ${turn.session_id} was interrupted and is not resumed: ${turn.reason}`,
    );
  if (!autoResume && report.skipped.length > 0)
    warn(
      `${report.skipped.length} interrupted turn(s) can be continued by sending a new message in their session (gateway.auto_resume is off)`,
    );
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off("listening", onListening);
      reject(
        error.code === "EADDRINUSE"
          ? new TenaxError("gateway_port_in_use", `port ${port} on ${host} is already in use`, {
              hint: "stop what uses it, or choose another port with --port P (or gateway.port in config.yaml)",
            })
          : error,
      );
    };
    const onListening = () => {
      server.off("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    server.listen(port, host);
  });
}
