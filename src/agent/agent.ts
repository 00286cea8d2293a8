// The agent of one profile in one process: the model runtime, the tools with their process
// registry, the one scheduler, checkpoints and compression, over the profile's store. `turn()`
// runs one turn; `close()` stops everything it started (processes, timers, simulators).

import { z } from "zod";
import type { SnapshotResult } from "../checkpoints/store.js";
import { addExecAllowPattern } from "../config/exec-allow-write.js";
import { loadProfileSecrets, type ProfileSecrets } from "../config/profile-secrets.js";
import type { TenaxConfig } from "../config/schema.js";
import { type Deps, defaultDeps } from "../core/deps.js";
import { leaseNow, localOwners, type Owners, ownerIsGone } from "../core/owners.js";
import { CircuitBreakers, StoreBreakerRecords } from "../llm/breaker.js";
import { breakerSettings } from "../llm/breaker-state.js";
import { ConcurrencyLimiter } from "../llm/concurrency.js";
import { ProviderHealthRecorder } from "../llm/provider-health.js";
import type { StatusEvent } from "../llm/route-events.js";
import { createModelRuntime, type ModelRuntime } from "../llm/runtime.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { ApprovalBook } from "./approvals/approval-book.js";
import { ExecGate } from "./approvals/exec-gate.js";
import type { CompressionEvent } from "./compression.js";
import { judgeCommand } from "./exec-policy/index.js";
import { COMPACTION_KIND, type Compaction, MARKER_ROLE } from "./history.js";
import { mcpApprovalGate } from "./mcp/mcp-approvals.js";
import { McpHub, storeToolMemory } from "./mcp/mcp-hub.js";
import { DEFAULT_GRACE_MS } from "./process-group.js";
import { bootId, selfIdentity } from "./process-identity.js";
import { ProcessLedger } from "./process-ledger.js";
import { profileMark } from "./process-marks.js";
import { type ProcessReapReport, reapOrphanProcesses } from "./process-reaper.js";
import { ProcessRegistry } from "./processes.js";
import type { ReapedTurn, ReapOptions } from "./reap.js";
import { chooseSandbox, type SandboxChoice } from "./sandbox/sandbox.js";
import { Scheduler } from "./scheduler.js";
import { defineTool } from "./tools/define-tool.js";
import { durableTools } from "./tools/durable.js";
import { FileRoots, fileAndProcessTools } from "./tools/index.js";
import { commandPlace } from "./tools/secret-files.js";
import { type Tool, ToolError } from "./tools/types.js";
import {
  type AgentEvent,
  newTaskId,
  runTurn,
  type TurnCompressor,
  type TurnDeps,
  type TurnInput,
  type TurnResult,
} from "./turn.js";
import { TurnOwnership } from "./turn-ownership.js";
import { TurnProgress } from "./turn-progress.js";
import type { ResumePoint } from "./turn-resume.js";

/** What `/compress` did: the compaction made (null: none) and the compressor's events of the call. */
export interface ManualCompression {
  compaction: Compaction | null;
  events: CompressionEvent[];
}

export const DEFAULT_SYSTEM_PROMPT = `You are Tenax, an agent running on the operator's own machine. Use the tools to look before you act: read files before changing them, run commands to check your work, and keep a todo list for work of several steps. Say plainly what you did and what failed. When a tool returns an error, read it and change something before trying again.`;

/** How long a turn waits for the MCP servers' first start before it goes on without those still starting. */
const MCP_FIRST_START_WAIT_MS = 10_000;

/** How much of a subagent's reply its parent gets back. */
const MAX_SUBAGENT_REPLY = 20_000;

export interface AgentOptions {
  paths: ProfilePaths;
  config: TenaxConfig;
  store: StorePort;
  deps?: Partial<Deps>;
  /** Checkpoints on for this process, whatever config says (`--checkpoints`). */
  checkpoints?: boolean;
  /** Snapshots a project before the turn's first change there; built from config when left out. */
  checkpoint?: ((dir: string, reason: string) => Promise<SnapshotResult>) | null;
  compressor?: TurnCompressor | null;
  /** Every status event of every turn (retries, rotation, fallback, ...), for health and logs. */
  onStatus?: (event: StatusEvent) => void;
  /**
   * Every event of every turn of this agent, with its session, and the compressor's outside a
   * turn: the audit trail of a process that has no event feed (`tenax chat`, `tenax cron tick`).
   */
  onTurnEvent?: (sessionId: string, event: AgentEvent) => void;
  runtime?: ModelRuntime;
  /**
   * The profile's secrets: redacted from model output, tool output and status, and kept from the
   * tools' child processes. Read from config, `.env` and the environment when left out.
   */
  secrets?: ProfileSecrets;
  /** Where the tools' commands run; chosen from tools.exec.sandbox when left out. */
  sandbox?: SandboxChoice;
  /** Who holds leases and whether a holder has ended (core/owners.ts); this host's processes by default. */
  owners?: Owners;
}

export class Agent {
  readonly processes: ProcessRegistry;
  /** The profile in the marks of this agent's commands (process-marks.ts). */
  private readonly profileMark: string;
  readonly scheduler: Scheduler;
  /** What the exec policy holds back, waiting for someone to approve it (durable records). */
  readonly approvals: ApprovalBook;
  /** Every running turn's progress: stalls, agent.turn_deadline and stop requests (turn-progress.ts). */
  readonly progress: TurnProgress;
  private readonly subagents: ConcurrencyLimiter;
  private readonly turnDeps: TurnDeps;
  private readonly listeners = new Map<string, (event: AgentEvent) => void>();
  private closed = false;
  /** Who holds leases, and whether a holder has ended: this process's tags and everyone else's. */
  readonly owners: Owners;
  /** Which running turns this process may end or take over (turn-ownership.ts). */
  private readonly ownership: TurnOwnership;
  /** The profile's MCP servers (config `mcp.servers`), started by `startMcp`; null when none are configured. */
  readonly mcp: McpHub | null;

  private constructor(
    readonly options: AgentOptions,
    readonly runtime: ModelRuntime,
    readonly deps: Deps,
    readonly secrets: ProfileSecrets,
    /** How this process saw each provider answer or fail; written to the store when it changes. */
    readonly providerHealth: ProviderHealthRecorder,
    /** Where the tools' commands run (tools.exec.sandbox), and why. */
    readonly sandbox: SandboxChoice,
  ) {
    this.owners = options.owners ?? localOwners();
    this.ownership = new TurnOwnership({
      store: options.store,
      owners: this.owners,
      leaseNow: () => this.leaseNow(),
      leaseSeconds: options.config.agent.lease_seconds,
    });
    this.scheduler = new Scheduler({ now: () => deps.clock.now() });
    // A change held back by the write throttle is written within a second or so.
    this.scheduler.every("provider health: write", 1000, () => providerHealth.flushDue());
    this.profileMark = profileMark(options.paths.dir);
    const owner = selfIdentity();
    this.processes = new ProcessRegistry({
      secrets,
      envAllow: options.config.tools.exec.env,
      profile: this.profileMark,
      sandbox: sandbox.sandbox,
      ...(owner === null
        ? {}
        : {
            ledger: new ProcessLedger({
              store: options.store,
              owner,
              bootId: bootId(),
              profile: this.profileMark,
              now: () => deps.clock.now(),
            }),
          }),
    });
    const config = options.config;
    this.subagents = new ConcurrencyLimiter(config.agent.max_subagents);
    this.approvals = new ApprovalBook({
      store: options.store,
      timeoutMs: config.tools.exec.approval_timeout * 1000,
      remember: async (pattern) => {
        await addExecAllowPattern(options.paths.config, pattern);
      },
      clock: deps.clock,
      sleep: deps.sleep,
    });
    this.progress = new TurnProgress({
      clock: deps.clock,
      stallAfterMs: config.agent.stall_after * 1000,
      deadlineMs: config.agent.turn_deadline * 1000,
      store: options.store,
      owner: this.owners.turnOwner,
    });
    this.scheduler.every("turn progress", this.progress.checkEveryMs, () => this.progress.check());
    const gate = new ExecGate({
      book: this.approvals,
      mode: config.tools.exec.mode,
      judge: (command, approved, cwd) =>
        judgeCommand(
          command,
          { ...config.tools.exec, place: commandPlace(cwd, options.paths, this.processes.environment()) },
          approved,
        ),
    });
    const base = [
      ...fileAndProcessTools(this.processes, {
        terminal: { gate },
        files: new FileRoots(config.tools.files, { profile: options.paths }),
      }),
      ...durableTools(options.store, () => deps.clock.now()),
    ];
    this.mcp = this.mcpHub(deps, secrets);
    const own = [...base, this.delegateTool(base)];
    const mcp = this.mcp;
    this.turnDeps = {
      store: options.store,
      router: runtime.router,
      // The MCP servers' tools as they are when a turn starts: a server's new list reaches the next turn.
      get tools() {
        return mcp === null ? own : [...own, ...mcp.tools()];
      },
      scheduler: this.scheduler,
      deps,
      limits: config.agent,
      system: config.agent.system_prompt ?? DEFAULT_SYSTEM_PROMPT,
      cleanupTask: (taskId) => this.processes.cleanupTask(taskId),
      checkpoint: options.checkpoint ?? null,
      compressor: options.compressor ?? null,
      redactor: secrets.redactor,
      awaitsApproval: (sessionId, turnId, callId) => this.approvals.isPending(sessionId, turnId, callId),
      progress: this.progress,
      turnOwner: this.owners.turnOwner,
      leaseNow: () => this.leaseNow(),
      taskOutput: (taskId) => this.processes.outputBytes(taskId),
      abandoned: (turnId) => this.ownership.abandon(turnId),
    };
  }

  /** The profile's MCP servers, their tools' approvals going through the exec approval flow. */
  private mcpHub(deps: Deps, secrets: ProfileSecrets): McpHub | null {
    const { config, paths } = this.options;
    if (Object.keys(config.mcp.servers).length === 0) return null;
    return new McpHub({
      servers: config.mcp.servers,
      profileDir: paths.dir,
      profileMark: this.profileMark,
      owner: selfIdentity(),
      secrets,
      deps,
      redact: (text) => secrets.redactor.redact(text),
      gate: mcpApprovalGate(this.approvals, config.tools.exec.allow),
      tryCommand: (server) => tenaxCommand(paths.name, ["mcp", "test", server]),
      memory: storeToolMemory(this.options.store),
    });
  }

  /** Start the profile's MCP servers (the gateway and `tenax chat` do, once orphans are reaped); returns at once. */
  startMcp(): void {
    this.mcp?.start();
  }

  static async create(given: AgentOptions): Promise<Agent> {
    const owners = given.owners ?? localOwners();
    const options: AgentOptions = { ...given, owners };
    const deps: Deps = { ...defaultDeps, ...options.deps };
    // Before anything starts: tools.exec.sandbox bwrap without bubblewrap refuses here.
    const sandbox =
      options.sandbox ??
      (await chooseSandbox(options.config.tools.exec.sandbox, {
        profile: options.paths,
        roots: options.config.tools.files.roots,
        env: process.env,
        execPath: process.execPath,
      }));
    const secrets = options.secrets ?? loadProfileSecrets(options.paths, { config: options.config });
    const providerHealth = new ProviderHealthRecorder({
      store: options.store,
      now: () => deps.clock.now(),
      redactor: secrets.redactor,
    });
    const runtime =
      options.runtime ??
      (await createModelRuntime(options.config, {
        ledger: options.store.credentials(),
        deps,
        redactor: secrets.redactor,
        ...(options.onStatus ? { onStatus: options.onStatus } : {}),
        onOutcome: (outcome) => providerHealth.observeCall(outcome),
        breaker: new CircuitBreakers({
          records: new StoreBreakerRecords(options.store, () => deps.clock.now()),
          settings: breakerSettings(options.config.breaker),
          now: () => deps.clock.now(),
          owner: owners.self,
          gone: (owner) => ownerIsGone(owners, owner),
        }),
      }));
    return new Agent(options, runtime, deps, secrets, providerHealth, sandbox);
  }

  get store(): StorePort {
    return this.options.store;
  }

  get tools(): readonly Tool[] {
    return this.turnDeps.tools;
  }

  /**
   * Mark turns whose process died as interrupted (run this when a process starts): an expired
   * lease, or an owner pid that no longer runs.
   */
  reap(options: Omit<ReapOptions, "owners" | "abandoned"> = {}): Promise<ReapedTurn[]> {
    return this.ownership.reap(options);
  }

  /**
   * Whether this process gave the turn up with its row still running (its end could not be
   * written): nothing runs it, so `reap` marks it interrupted at once, whatever its lease says.
   */
  abandoned(turnId: string): boolean {
    return this.ownership.abandoned(turnId);
  }

  /**
   * Take an interrupted turn over for this process (its lease, a new epoch): resume it by passing the
   * point as `turn({ resume: { turnId, point } })`. Refused with `lease_lost` when another process
   * took it first, `turn_running` when its session runs another turn.
   */
  takeOver(sessionId: string, turnId: string): Promise<ResumePoint> {
    return this.ownership.takeOver(sessionId, turnId);
  }

  /** Now, in the clock leases are written and judged in: the database's on a shared store. */
  leaseNow(): number {
    return leaseNow(this.owners, this.deps.clock.now());
  }

  /**
   * End what a dead Tenax process of this profile left running (run this when a process starts):
   * the commands its records name and every process carrying its mark, never a live process's.
   */
  reapProcesses(): Promise<ProcessReapReport> {
    return reapOrphanProcesses({
      store: this.store,
      profile: this.profileMark,
      self: selfIdentity(),
      bootId: bootId(),
      graceMs: DEFAULT_GRACE_MS,
      now: () => this.deps.clock.now(),
    });
  }

  async newSession(options: { title?: string; source?: string; parent?: string } = {}): Promise<string> {
    const { id, op } = this.newSessionOp(options);
    await this.store.write([op]);
    return id;
  }

  /** The write creating a session on the primary model, to commit with a turn's start (TurnInput.before). */
  newSessionOp(options: { title?: string; source?: string; parent?: string } = {}): {
    id: string;
    op: WriteOp;
  } {
    return this.store.sessionOp({
      title: options.title ?? null,
      source: options.source ?? "cli",
      model: `${this.runtime.router.primary.provider}/${this.runtime.router.primary.model}`,
      parent_session_id: options.parent ?? null,
    });
  }

  async turn(input: TurnInput): Promise<TurnResult> {
    if (this.closed) throw new Error("the agent is closed");
    const listener = this.withTap(input.sessionId, input.onEvent);
    if (listener) this.listeners.set(input.sessionId, listener);
    const run = () =>
      runTurn(this.turnDeps, listener === input.onEvent ? input : { ...input, onEvent: listener });
    // A turn right after the start sees the MCP servers' tools: it waits for their first start, a little.
    await this.mcp?.firstStart(MCP_FIRST_START_WAIT_MS);
    try {
      // A session held by a turn this process gave up on (its end could not be written) is freed
      // by reaping that turn: nothing runs it.
      return await this.ownership.start(run);
    } finally {
      if (listener && this.listeners.get(input.sessionId) === listener)
        this.listeners.delete(input.sessionId);
    }
  }

  /**
   * Hand an event raised outside a turn's own call chain (by the shared compressor) to the
   * listener of the turn running on that session, if any.
   */
  dispatch(sessionId: string, event: AgentEvent): void {
    this.progress.progressOf(sessionId);
    const listener = this.listeners.get(sessionId) ?? this.withTap(sessionId, undefined);
    try {
      listener?.(event);
    } catch {
      // A broken listener never breaks the work that reports to it.
    }
  }

  /** withTap for a listener there is. */
  private withTapped(sessionId: string, listener: (event: AgentEvent) => void): (event: AgentEvent) => void {
    return this.withTap(sessionId, listener) ?? listener;
  }

  /** A turn's listener with `onTurnEvent` in front of it (which must not stop it if it throws). */
  private withTap(
    sessionId: string,
    listener: ((event: AgentEvent) => void) | undefined,
  ): ((event: AgentEvent) => void) | undefined {
    const tap = this.options.onTurnEvent;
    if (!tap) return listener;
    return (event) => {
      try {
        tap(sessionId, event);
      } catch {
        // The trail never breaks the turn.
      }
      listener?.(event);
    };
  }

  /**
   * `/compress`: compress a session's context now, whatever its size. Says what happened: the
   * compaction (null when nothing was done) and the compressor's events of this call, in order,
   * since no turn listens to them.
   */
  async compress(sessionId: string, signal?: AbortSignal): Promise<ManualCompression> {
    const events: CompressionEvent[] = [];
    const compressor = this.turnDeps.compressor;
    if (!compressor) return { compaction: null, events };
    const primary = this.runtime.router.primary;
    const compaction = await compressor.compress(
      {
        sessionId,
        turnId: null,
        transcript: await this.store.getMessages(sessionId),
        compaction: await this.store.getRecord<Compaction>(COMPACTION_KIND, sessionId),
        system: this.turnDeps.system,
        window: this.runtime.router.limits(primary)?.context_window ?? 128_000,
        lastInputTokens: null,
        reason: "manual",
        signal: signal ?? new AbortController().signal,
        onEvent: (event) => events.push(event),
      },
      { attempts: 0, overflowBypassUsed: false },
    );
    return { compaction, events };
  }

  /** The system prompt sent first in every request. */
  get system(): string | null {
    return this.turnDeps.system;
  }

  /** Stop what this agent started: every process of every task, the scheduler, in-process simulators. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.scheduler.stop();
    await this.mcp?.close();
    await this.processes.cleanupAll();
    // What the write throttle held back reaches the store before it closes.
    await this.providerHealth.flush();
    await this.runtime.close();
  }

  /**
   * delegate_task: a subagent works on a task in its own session (linked to the parent's), under
   * the parent's abort signal, with its own process ownership; at most `agent.max_subagents` run
   * at once. Subagents cannot delegate further. Nothing of a finished subagent is kept in memory.
   */
  private delegateTool(tools: Tool[]): Tool {
    return defineTool({
      name: "delegate_task",
      description:
        "Hand a self-contained task to a subagent with its own session and the same tools (except delegate_task). It returns the subagent's final answer. Give it everything it needs to know in the task text.",
      schema: z.strictObject({
        task: z.string().min(1).max(20_000).describe("what to do, with all the context needed"),
        title: z.string().min(1).max(200).optional(),
      }),
      readOnly: false,
      run: async (args, parent) => {
        const release = await this.subagents.acquire(parent.signal);
        try {
          const sessionId = await this.newSession({
            title: args.title ?? args.task.slice(0, 80),
            source: "subagent",
            parent: parent.sessionId,
          });
          // The subagent's work is its parent's progress; the parent's deadline covers it.
          const result = await runTurn(
            { ...this.turnDeps, tools: [...tools, ...(this.mcp?.tools() ?? [])], progress: null },
            {
              sessionId,
              text: args.task,
              cwd: parent.cwd,
              signal: parent.signal,
              taskId: newTaskId(this.deps.clock.now()),
              // Its commands are approved through the parent's channel, which hears of them.
              approvals: parent.approvals,
              // Its status events go to this process's trail (as its own session's), when it has one.
              onEvent: this.withTapped(sessionId, (event) => {
                if (event.type === "approval_requested" || event.type === "approval_decided")
                  parent.emit(event);
                else this.progress.progressOf(parent.sessionId);
              }),
            },
          );
          if (result.status === "interrupted")
            throw parent.signal.reason ?? new ToolError("the subagent was interrupted");
          const reply =
            result.reply.length > MAX_SUBAGENT_REPLY
              ? `${result.reply.slice(0, MAX_SUBAGENT_REPLY)}\n[... cut by Tenax: the whole reply is in session ${sessionId}]`
              : result.reply;
          return {
            session_id: sessionId,
            status: result.status,
            partial: result.partial,
            reply,
            error: result.error,
          };
        } finally {
          release();
        }
      },
    });
  }
}

export type { AgentEvent, TurnResult };
export { MARKER_ROLE };
