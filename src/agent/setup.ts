// Opening a profile's agent for a process (chat, gateway): the store as the process's one writer,
// checkpoints when config or a flag asks, compression, the model runtime with the shared key
// ledger; turns a dead process left running are reaped first, and the commands it left running are
// ended. `close()` undoes all of it.

import { CheckpointStore } from "../checkpoints/store.js";
import { loadProfileSecrets, type ProfileSecrets } from "../config/profile-secrets.js";
import type { TenaxConfig } from "../config/schema.js";
import { type Deps, defaultDeps } from "../core/deps.js";
import { localOwners, type Owners } from "../core/owners.js";
import type { StatusEvent } from "../llm/route-events.js";
import type { ProfilePaths } from "../profile/paths.js";
import { InstanceRegistry, type InstanceRegistryOptions } from "../store/instances.js";
import type { StorePort } from "../store/port.js";
import { openProfileStore, releaseStore, type StoreSettings } from "../store/registry.js";
import { Agent } from "./agent.js";
import { type AuditSource, type AuditTrail, openAuditTrail } from "./audit-trail.js";
import { Compressor } from "./compression.js";
import type { ProcessReapReport } from "./process-reaper.js";
import type { ReapedTurn } from "./reap.js";
import type { AgentEvent, TurnCompressor } from "./turn.js";

export interface OpenAgentOptions {
  storeSettings?: StoreSettings;
  /** `--checkpoints`: on for this process whatever config says. */
  checkpoints?: boolean;
  deps?: Partial<Deps>;
  onStatus?: (event: StatusEvent) => void;
  /** Context compression; on by default (config `compression`), off with null. */
  compressor?: null;
  /** The profile's secrets (loadProfileSecrets); read from config, `.env` and the environment when left out. */
  secrets?: ProfileSecrets;
  /**
   * Write this process's turn and store events to the audit trail (logs/events.jsonl), naming it
   * `source`; `onFailure` is told once when the file cannot be written. The gateway leaves it out:
   * its event feed writes the trail.
   */
  audit?: { source: AuditSource; onFailure?: (message: string) => void };
  /** On a shared store: the instance registry's settings (heartbeat, what the row says). */
  instance?: InstanceRegistryOptions;
  /** Start the profile's MCP servers (config `mcp.servers`) once orphans are reaped: the gateway and `tenax chat` do. */
  mcp?: boolean;
}

export interface OpenedAgent {
  agent: Agent;
  /** Who holds leases and claims (core/owners.ts): this process's tags and how others are judged. */
  owners: Owners;
  /** On a shared store (PostgreSQL): this process's instance, its heartbeat and lock; else null. */
  instances: InstanceRegistry | null;
  /** The profile's store this opened, on the engine its config names. */
  store: StorePort;
  /** The audit trail this process writes, when `audit` asked for it. */
  trail: AuditTrail | null;
  checkpoints: CheckpointStore | null;
  reaped: ReapedTurn[];
  /** What dead processes of the profile left running, ended before anything else ran. */
  reapedProcesses: ProcessReapReport;
  close(): Promise<void>;
}

export async function openAgent(
  paths: ProfilePaths,
  config: TenaxConfig,
  options: OpenAgentOptions = {},
): Promise<OpenedAgent> {
  // One set of secrets for the whole agent: the store redacts what it is given to keep, the
  // runtime what providers return, the tools what commands print.
  const secrets = options.secrets ?? loadProfileSecrets(paths, { config });
  const store = await openProfileStore(paths, { ...options.storeSettings, redactor: secrets.redactor });
  const trail = options.audit
    ? openAuditTrail(paths, config.logs, { ...options.audit, redactor: secrets.redactor })
    : null;
  const offStore = trail ? store.on((event) => trail.storeEvent(event)) : () => {};
  // On a shared store every process that runs turns is an instance (store/instances.ts): its
  // leases name it, and others judge it by its lock, not by a pid their host cannot see.
  const instances = store.engine === "postgres" ? new InstanceRegistry(store, options.instance) : null;
  try {
    await instances?.start();
    const owners = instances === null ? localOwners() : instances.owners();
    const checkpoints =
      config.checkpoints.enabled || options.checkpoints
        ? new CheckpointStore({ home: paths.home, maxSnapshots: config.checkpoints.max_snapshots })
        : null;
    let compressor: TurnCompressor | null = null;
    const agent = await Agent.create({
      paths,
      config,
      store,
      secrets,
      owners,
      ...(options.deps ? { deps: options.deps } : {}),
      ...(options.onStatus ? { onStatus: options.onStatus } : {}),
      ...(trail
        ? { onTurnEvent: (sessionId: string, event: AgentEvent) => trail.turnEvent(sessionId, event) }
        : {}),
      checkpoint: checkpoints ? (dir, reason) => checkpoints.snapshot(dir, reason) : null,
      // The compressor needs the router the agent builds, so it is looked up when a turn runs.
      compressor: {
        needed: (input) => compressor?.needed(input) ?? false,
        compress: (input, turn) => compressor?.compress(input, turn) ?? Promise.resolve(null),
      },
    });
    if (options.compressor !== null) {
      compressor = new Compressor({
        router: agent.runtime.router,
        store,
        deps: { ...defaultDeps, ...options.deps },
        settings: config.compression,
        onEvent: (event) => agent.dispatch(event.session_id, event),
      });
    }
    const reaped = await agent.reap();
    // What a dead process of the profile left running (its MCP servers too) is ended first.
    const reapedProcesses = await agent.reapProcesses();
    const offMcp = trail && agent.mcp ? agent.mcp.on((event) => trail.mcpEvent(event)) : () => {};
    if (options.mcp) agent.startMcp();
    return {
      agent,
      owners,
      instances,
      store,
      trail,
      checkpoints,
      reaped,
      reapedProcesses,
      close: async () => {
        await agent.close();
        offMcp();
        await instances?.stop();
        offStore();
        await releaseStore(store);
      },
    };
  } catch (error) {
    await instances?.stop();
    offStore();
    await releaseStore(store);
    throw error;
  }
}
