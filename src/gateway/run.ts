// A gateway process from start to stop: the pid file, the clean-shutdown marker, the agent, the
// port, and the signals. SIGTERM/SIGINT (or the end of `tenax up`, through `stopWhen`) stop new
// turns, tell open streams, drain up to gateway.drain_timeout, interrupt the rest, close agent and
// store, and mark a clean stop only when the drain completed. A stop asked for while it starts
// ends the start where it is (nothing resumed, no wait for the providers, the port never opened);
// a second signal cuts the drain short.

import { existsSync, rmSync, writeFileSync } from "node:fs";
import { describeProcessReap } from "../agent/process-reaper.js";
import { type ReapedTurn, reapedByOthers } from "../agent/reap.js";
import { type ResumeOptions, type ResumeReport, resumeInterrupted } from "../agent/resume.js";
import { type OpenedAgent, openAgent } from "../agent/setup.js";
import { startWatchdog } from "../agent/watchdog.js";
import { ensureGatewayKey, GATEWAY_KEY_VARIABLE, type GatewayKeySource } from "../config/gateway-key.js";
import { loadProfileSecrets, type ProfileSecrets } from "../config/profile-secrets.js";
import type { TenaxConfig } from "../config/schema.js";
import { errorMessage, TenaxError } from "../core/errors.js";
import type { RotatingLog } from "../core/log-file.js";
import { startTracing, TRACE_SHUTDOWN_MS, type Tracing } from "../core/trace-start.js";
import { clockSkewRefusal } from "../health/instances-component.js";
import { closeApp, isLoopback, listen, urlHost } from "../http/listen.js";
import type { GatewayLaunch } from "../profile/gateway-pid.js";
import type { ProfilePaths } from "../profile/paths.js";
import { takeRestartRequested } from "../profile/restart-marker.js";
import type { InstanceRegistryOptions } from "../store/instances.js";
import type { StoreSettings } from "../store/registry.js";
import type { TurnWatcher } from "./gateway.js";
import { buildGatewayParts, type GatewayParts, type OperatorLines } from "./gateway-parts.js";
import { gatewayLog } from "./observability.js";
import { acquirePidFile, type PidLock } from "./pid-file.js";
import { lastGatewayStart, lastStopLine, recordGatewayStart } from "./start-record.js";
import { StopRequest } from "./stop-request.js";

/** How often a gateway on a shared store looks for turns whose instance has ended. */
const TAKEOVER_SWEEP_MS = 1_000;

export interface RunGatewayOptions {
  paths: ProfilePaths;
  config: TenaxConfig;
  host: string;
  port: number;
  version: string;
  storeSettings: StoreSettings;
  cwd: string;
  /** Where gateway.api_key came from, as the config loader found it (for the start's one line). */
  keySource?: GatewayKeySource;
  /** How it was started; recorded in the pid file for the advice shown when it is down. */
  launch?: GatewayLaunch;
  /** Resolves (with why) when the gateway should drain and stop as on SIGTERM: `tenax up` is gone. */
  stopWhen?: Promise<string>;
  /** Lines for the operator (stdout). */
  info(line: string): void;
  warn(line: string): void;
  /** The variables `${VAR}` in the config's secret keys read (LoadedConfig.secretVariables). */
  secretVariables?: readonly string[];
  /**
   * Tell `report` when the operator's output goes away (a closed stdout or stderr); returns the
   * unsubscribe. The gateway serves on and says so in its log.
   */
  onOutputLost?: (report: (what: string) => void) => () => void;
  /** This gateway's instance registry's settings (PostgreSQL): its heartbeat, a clock for tests. */
  instance?: InstanceRegistryOptions;
}

/** Serve until a signal stops the gateway; resolves with the exit code. */
export async function runGateway(options: RunGatewayOptions): Promise<number> {
  const { host } = options;
  if (!isLoopback(host) && options.config.gateway.auth === "none") {
    throw new TenaxError(
      "gateway_unprotected",
      `refusing to serve on ${host} with gateway.auth: none: anyone who can reach it could run the agent`,
      {
        hint: `remove auth: none (the gateway then needs its API key, ${GATEWAY_KEY_VARIABLE}), or serve on 127.0.0.1`,
        exitCode: 2,
      },
    );
  }
  // Listened for before the pid file exists: from then on no stop signal can kill the process by
  // the default action, which would leave the file behind.
  const stop = new StopRequest();
  const unlisten = stop.listen(options.stopWhen);
  try {
    return await runLocked(options, stop);
  } finally {
    unlisten();
  }
}

async function runLocked(options: RunGatewayOptions, stop: StopRequest): Promise<number> {
  const { paths } = options;
  // On a store several gateways share, a home may run more than one (each its own pid file).
  const lock = acquirePidFile(
    paths.pid,
    { pid: process.pid, started_at: Date.now(), ...options.launch },
    paths.name,
    { shared: options.config.store.engine === "postgres" },
  );
  let keyed: ReturnType<typeof ensureGatewayKey>;
  try {
    // Under the pid lock, so two starts cannot each write a key of their own.
    keyed = ensureGatewayKey(paths, options.config, options.keySource ?? "config");
  } catch (error) {
    lock.release();
    throw error;
  }
  // No secret leaves the process: not in a reply, the store, the feed, the log or these lines.
  // Read after the key is made, so a key this start wrote is one of them.
  const secrets = loadProfileSecrets(paths, {
    config: keyed.config,
    secretVariables: [...(options.secretVariables ?? [])],
  });
  // Every operator line also goes to logs/gateway.log, which rotates at logs.max_mb; so does the
  // error a gateway dies of, which is where `tenax up` sends people after a crash loop.
  const { redactor } = secrets;
  const log = gatewayLog(paths, keyed.config, redactor);
  const out: OperatorLines = {
    info: (line) => {
      options.info(redactor.redactMessage(line));
      log.write("info", line);
    },
    warn: (line) => {
      options.warn(redactor.redactMessage(line));
      log.write("warn", line);
    },
  };
  const unwatchOutput = options.onOutputLost?.((what) =>
    out.warn(`${what}; the gateway keeps serving and its lines go on in ${log.file}`),
  );
  // Before the agent opens, so the turns it resumes are traced too; flushed, bounded, at the end.
  const tracing = await startTracing(keyed.config.telemetry, { version: options.version, report: out.warn });
  if (tracing !== null)
    out.info(`telemetry: exporting traces to ${tracing.where} (OpenTelemetry, OTLP/HTTP)`);
  try {
    if (lock.reclaimed !== null)
      out.warn(`reclaimed the pid file of gateway pid ${lock.reclaimed}, which is no longer running`);
    if (lock.file !== paths.pid)
      out.info(
        `another gateway of profile ${paths.name} runs from this home; this one holds ${lock.file} (the store is shared: both serve)`,
      );
    return await serve({ ...options, config: keyed.config }, { keyed, secrets, lock, log, out, stop });
  } catch (error) {
    log.write("error", `the gateway stopped on an error: ${errorMessage(error)}`);
    throw error;
  } finally {
    if (tracing !== null) out.info(await tracingStopLine(tracing));
    unwatchOutput?.();
    lock.release();
    log.close();
  }
}

interface Started {
  keyed: ReturnType<typeof ensureGatewayKey>;
  secrets: ProfileSecrets;
  lock: PidLock;
  log: RotatingLog;
  out: OperatorLines;
  stop: StopRequest;
}

/** The gateway from its pid lock and key on: open the agent, serve, drain, close. */
async function serve(options: RunGatewayOptions, started: Started): Promise<number> {
  const { stop } = started;
  // A second signal means "stop now": the drain is cut short and what runs is interrupted.
  stop.whenHurried((again) => started.out.info(`${again} again: interrupting the running turns now`));
  const { opened, reapedElsewhere } = await openGatewayAgent(options, started);
  // Until the port is open, a step that fails ends the start: what was opened closes with it, or
  // the store, the simulator and the monitor would keep a process alive that serves nothing.
  let parts: GatewayParts | null = null;
  try {
    parts = await buildGatewayParts({
      paths: options.paths,
      config: options.config,
      cwd: options.cwd,
      version: options.version,
      opened,
      log: started.log,
      redactor: started.secrets.redactor,
      out: started.out,
    });
    // From the moment a stop is asked for (at once, not a tick later), nothing new starts: resume
    // leaves the turns interrupted.
    const { cron, chat, gateway } = parts;
    const shutDown = () => {
      cron.stop();
      chat?.quiesce();
      gateway.beginShutdown();
    };
    if (stop.signal.aborted) shutDown();
    else stop.signal.addEventListener("abort", shutDown, { once: true });
    const starting = await resumeTurns(options, started, opened, parts, reapedElsewhere);
    await settleLeftRuns(parts, started.out);
    if (starting) await startBackground(options.config, opened, parts, started.out);
    await openPort(options, started, parts);
  } catch (error) {
    await parts?.observed.close();
    await opened.close();
    throw error;
  }
  return await shutDownGateway(options, started, opened, parts);
}

/**
 * Say where the key is and how the last stop went, open the agent (which reaps the turns a stopped
 * process left running) and record this start. Refuses a clock far off the database's.
 */
async function openGatewayAgent(
  options: RunGatewayOptions,
  started: Started,
): Promise<{ opened: OpenedAgent; reapedElsewhere: ReapedTurn[] }> {
  const { paths, config } = options;
  const { keyed, secrets, lock } = started;
  const { info, warn } = started.out;
  if (keyed.tightened !== null) warn(keyed.tightened);
  info(keyLine(paths, keyed.source));
  const clean = existsSync(paths.cleanShutdown);
  rmSync(paths.cleanShutdown, { force: true });
  // Opening reaps the turns a stopped process left running; they are resumed once the gateway exists.
  const opened = await openAgent(paths, config, {
    storeSettings: options.storeSettings,
    secrets,
    mcp: true,
    ...(options.instance ? { instance: options.instance } : {}),
  });
  // A clock far off the database's would misjudge every lease and heartbeat: refused here, before
  // anything is resumed or served (a smaller skew only degrades /health's instances).
  const refusal = clockSkewRefusal(opened.instances, config.instances.clock_skew_max * 1000);
  if (refusal !== null) {
    await opened.close();
    throw refusal;
  }
  info(lastStopLine(clean, await lastGatewayStart(opened.store)));
  await recordGatewayStart(opened.store, { pid: process.pid, started_at: Date.now() }).catch(
    (error: unknown) =>
      warn(
        `could not record this start in the store (${errorMessage(error)}): the next start may call itself the first`,
      ),
  );
  for (const line of describeProcessReap(opened.reapedProcesses)) warn(line);
  // A command that opened the store between the crash and now (`tenax chat`) may have reaped the
  // crashed gateway's turns first; they are still this gateway's to resume.
  const reapedElsewhere =
    lock.crashed === null ? [] : await reapedByOthers(opened.store, lock.crashed, opened.reaped);
  for (const turn of reapedElsewhere)
    info(
      `turn ${turn.turn_id} of session ${turn.session_id} was running in the gateway that stopped (pid ${lock.crashed?.pid}) and was marked interrupted by another process since`,
    );
  if (opened.agent.runtime.builtIn)
    warn(
      "no provider is configured, so the built-in local simulator answers (it echoes); set model and providers in config.yaml for a real model",
    );
  return { opened, reapedElsewhere };
}

/**
 * Resume the interrupted turns (before the runs are recovered: a run whose turn is resumed follows
 * it instead of ending) and, unless a stop came meanwhile, start the watchdog. Returns whether the
 * gateway goes on starting.
 */
async function resumeTurns(
  options: RunGatewayOptions,
  started: Started,
  opened: OpenedAgent,
  parts: GatewayParts,
  reapedElsewhere: ReapedTurn[],
): Promise<boolean> {
  const { config } = options;
  const { info, warn } = started.out;
  const { gateway, runs, cron, chat, observed } = parts;
  const lifecycle: ResumeOptions<TurnWatcher> = {
    agent: opened.agent,
    reaped: [
      ...opened.reaped,
      ...reapedElsewhere,
      ...((await chat?.interruptedByStop([...opened.reaped, ...reapedElsewhere])) ?? []),
    ],
    host: gateway,
    autoResume: config.gateway.auto_resume,
    cwd: options.cwd,
    watcherFor: async (turnId, sessionId) =>
      (await runs.watcherFor(turnId, sessionId)) ??
      (await cron.runner.watcherFor(turnId, sessionId)) ??
      (await chat?.watcherFor(sessionId)),
    turnOptionsFor: (_turnId, sessionId) => cron.runner.turnOptionsFor(sessionId),
    onEvent: (event) => {
      (event.type === "turn_resumed" ? info : warn)(event.message);
      const { type, layer, session_id, message, ...data } = event;
      observed.hub.publish({ type, layer, session_id, message, data });
    },
  };
  const resumeReport = await resumeInterrupted(lifecycle);
  reportResume(resumeReport, config.gateway.auto_resume, warn);
  chat?.resumed(resumeReport);
  const starting = !started.stop.signal.aborted;
  if (starting)
    startWatchdog({
      ...lifecycle,
      // On a shared store a gone instance's turns are taken over within seconds, not half a lease.
      ...(opened.instances === null ? {} : { everyMs: TAKEOVER_SWEEP_MS }),
      onResume: (r) => reportResume(r, config.gateway.auto_resume, warn),
      onProcesses: (r) => {
        for (const line of describeProcessReap(r)) warn(line);
      },
    });
  return starting;
}

/** The runs and cron job runs a stopped process left running, settled (or taken over). */
async function settleLeftRuns(parts: GatewayParts, out: OperatorLines): Promise<void> {
  const settledRuns = await parts.runs.recover();
  if (settledRuns > 0) out.info(`${settledRuns} run(s) left running by the last gateway were settled`);
  const cronLeft = await parts.cron.runner.recover({ settleInterrupted: true });
  if (cronLeft.settled.length + cronLeft.taken.length > 0)
    out.info(
      `cron: ${cronLeft.settled.length} job run(s) left running by a stopped process were settled, ${cronLeft.taken.length} claimed but never started were taken over`,
    );
}

/** The background work on the agent's scheduler (cron, the outbox, runs, approvals) and the chat platforms. */
async function startBackground(
  config: TenaxConfig,
  opened: OpenedAgent,
  parts: GatewayParts,
  out: OperatorLines,
): Promise<void> {
  const { scheduler } = opened.agent;
  const { cron } = parts;
  if (config.cron.enabled) {
    cron.startOn(scheduler);
    parts.late.cronStats = () => cron.stats();
  }
  // Cron's deliveries go out even while cron is off: they are results of runs already made.
  parts.outbox.maintainOn(scheduler);
  parts.runs.maintainOn(scheduler);
  await parts.chat?.start();
  // Decided approvals are kept as long as ended runs are.
  opened.agent.approvals.maintainOn(
    scheduler,
    Math.max(config.gateway.run_retention_hours * 3_600_000, 7 * 24 * 3_600_000),
    (error) => out.warn(`approvals: ${(error as Error).message}`),
  );
}

/** Open the port (unless a stop came first) and say where the gateway listens. */
async function openPort(options: RunGatewayOptions, started: Started, parts: GatewayParts): Promise<void> {
  const { host } = options;
  const { stop, lock } = started;
  const { app, observed, late } = parts;
  // The first look at the providers, for at most a second: a provider that answers at once is
  // never `unknown` merely because the gateway has just started, and one that takes no connection
  // is `unknown` until its look ends, without holding the port closed for provider_probe_timeout.
  // A stop ends the wait at once.
  if (!stop.signal.aborted) await observed.monitor.firstProviderLook(undefined, stop.signal);
  // The app is made ready (its plugins load over several turns of the event loop) before the last
  // look at the stop, and one more turn lets a signal that came while the thread was busy be
  // delivered: from that look to the bind only promises run, so no stop can slip in between.
  await app.ready();
  await new Promise((resolve) => setImmediate(resolve));
  const bound = stop.signal.aborted
    ? null
    : await listen(app, host, options.port, {
        name: "gateway",
        hint: "stop what uses it, or choose another port with --port P (or gateway.port in config.yaml)",
      });
  if (bound === null) return;
  late.listeningAt = { host, port: bound };
  await lock.update({ pid: process.pid, started_at: Date.now(), host, port: bound, ...options.launch });
  late.address = `http://${urlHost(host)}:${bound}`;
  observed.hub.publish({
    type: "gateway_started",
    layer: "lifecycle",
    message: `gateway listening on ${late.address}`,
  });
  started.out.info(`gateway listening on ${late.address}`);
}

/**
 * Once a stop is asked for: no new turns, tell the chats, drain (interrupting what is left), settle
 * the runs, stop the parts and close the store; a clean stop is marked only when the drain completed.
 */
async function shutDownGateway(
  options: RunGatewayOptions,
  started: Started,
  opened: OpenedAgent,
  parts: GatewayParts,
): Promise<number> {
  const { paths, config } = options;
  const { stop } = started;
  const { info, warn } = started.out;
  const { gateway, chat, observed } = parts;
  const signal = await stop.requested;
  info(
    `${signal}: stopping${parts.late.listeningAt === null ? " before it served (the start ends here)" : ""}; no new turns, draining ${gateway.turnsInFlight} running turn(s) for up to ${config.gateway.drain_timeout}s`,
  );
  observed.hub.publish({
    type: "shutdown",
    layer: "lifecycle",
    message: `${signal}: the gateway is stopping`,
  });
  gateway.beginShutdown();
  // Before the drain, while the turns still run: each chat with one is told once.
  if (chat !== null) {
    const told = await chat.notifyShutdown(takeRestartRequested(paths));
    if (told.chats > 0)
      info(`told ${told.sent} of ${told.chats} chat(s) with a running turn that the gateway stops`);
  }
  const drained = await gateway.drain(config.gateway.drain_timeout * 1000, stop.hurried);
  if (!drained) {
    const left = await gateway.interruptAll();
    warn(
      `${stop.hurried.aborted ? "the drain was cut short" : "the drain timed out"}: ${left} turn(s) interrupted and saved; they can be continued with X-Session-Id`,
    );
  }
  // Every run's terminal event is committed (and sent to its followers) before the store closes.
  await parts.runs.settled();
  await parts.cron.runner.settled(5_000);
  await chat?.stop();
  parts.outbox.stop();
  await observed.close();
  await closeApp(parts.app);
  await opened.close();
  if (drained) writeFileSync(paths.cleanShutdown, `${new Date().toISOString()}\n`, { mode: 0o600 });
  info(drained ? "gateway stopped cleanly" : "gateway stopped after interrupting turns (not a clean stop)");
  return 0;
}

/** Flush the last spans (at most TRACE_SHUTDOWN_MS) and say what became of this process's spans. */
async function tracingStopLine(tracing: Tracing): Promise<string> {
  const flushed = await tracing.shutdown(TRACE_SHUTDOWN_MS);
  const { exported, dropped } = tracing.counts();
  return `telemetry: ${exported} span(s) exported, ${dropped} dropped${
    flushed
      ? ""
      : ` (the collector took no more within ${TRACE_SHUTDOWN_MS / 1000} s; what was left is dropped)`
  }`;
}

/** Where the key is (never the key itself), or that there is none. */
function keyLine(paths: ProfilePaths, source: GatewayKeySource | "written"): string {
  const send = "clients send it as Authorization: Bearer KEY";
  switch (source) {
    case "written":
      return `no API key was set (gateway.api_key, ${GATEWAY_KEY_VARIABLE}): wrote a new one to ${paths.env} as ${GATEWAY_KEY_VARIABLE}; ${send}`;
    case "env_file":
      return `API key: ${GATEWAY_KEY_VARIABLE} in ${paths.env}; ${send}`;
    case "environment":
      return `API key: ${GATEWAY_KEY_VARIABLE} from the environment; ${send}`;
    case "config":
      return `API key: gateway.api_key in ${paths.config}; ${send}`;
    case "none":
      return "gateway.auth is none: requests need no API key (loopback only; any program on this machine can run the agent)";
    default:
      return source satisfies never;
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
