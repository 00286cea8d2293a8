// A scenario's scratch profile: a simulator on a real socket in this process, and a fixed config
// that points every provider at it, written to the scratch TENAX_HOME (so a gateway child reads the
// same) and parsed with the real schema. Nothing of the user's own profiles is ever read.
import { mkdirSync, writeFileSync } from "node:fs";
import { type OpenedAgent, openAgent } from "../agent/setup.js";
import { configSchema, type TenaxConfig } from "../config/schema.js";
import { type Simulator, startSimulator } from "../llm/simulator/server.js";
import { DEFAULT_PROFILE, type ProfilePaths, profilePaths } from "../profile/paths.js";
import type { ScenarioContext } from "./runner.js";

/** The primary's window: small, so that a few long messages cross the compression threshold. */
export const MAIN_WINDOW = 8_000;

export interface ScratchProfile {
  sim: Simulator;
  paths: ProfilePaths;
  config: TenaxConfig;
}

/** Keys of the drill's fixed config: never real ones, and the simulator ignores them anyway. */
export const DRILL_KEYS = ["drill-key-one", "drill-key-two"];

/**
 * Start a simulator and write the scratch profile's config. `extra` adds or replaces top-level
 * config sections (JSON is YAML, so the child gateway reads the very same document).
 */
export async function scratchProfile(
  context: ScenarioContext,
  extra: Record<string, unknown> = {},
  options: { keys?: string[] } = {},
): Promise<ScratchProfile> {
  const sim = await startSimulator({
    models: {
      main: { context_window: MAIN_WINDOW },
      backup: { context_window: 128_000 },
      summarizer: { context_window: 100_000 },
    },
  });
  context.defer(() => sim.close());
  const document = {
    model: { provider: "sim", name: "main" },
    providers: {
      sim: {
        type: "simulator",
        base_url: sim.url,
        api_keys: options.keys ?? DRILL_KEYS,
        models: {
          main: { context_window: MAIN_WINDOW, max_output_tokens: 500 },
          summarizer: { context_window: 100_000, max_output_tokens: 1_000 },
        },
      },
      backup: {
        type: "simulator",
        base_url: sim.url,
        models: { backup: { context_window: 128_000, max_output_tokens: 1_000 } },
      },
    },
    fallback: [{ provider: "backup", name: "backup" }],
    retry: { max_attempts: 2 },
    checkpoints: { enabled: false },
    // The drill's scripted models run their own harmless commands in a scratch home.
    tools: { exec: { mode: "full" } },
    ...extra,
  };
  const paths = profilePaths(context.home, DEFAULT_PROFILE);
  mkdirSync(paths.dir, { recursive: true });
  writeFileSync(paths.config, `${JSON.stringify(document, null, 2)}\n`, { mode: 0o600 });
  return { sim, paths, config: configSchema.parse(document) };
}

/** The scratch profile's agent in this process, closed when the scenario ends. */
export async function scratchAgent(context: ScenarioContext, profile: ScratchProfile): Promise<OpenedAgent> {
  const opened = await openAgent(profile.paths, profile.config, {
    storeSettings: { integrityCheckTimeoutMs: 0 },
  });
  context.defer(() => opened.close());
  return opened;
}

/** A scratch profile, its agent and a fresh session: where every in-process scenario starts. */
export async function scratchSession(
  context: ScenarioContext,
  title: string,
  extra: Record<string, unknown> = {},
  options: { keys?: string[] } = {},
): Promise<ScratchProfile & { opened: OpenedAgent; session: string }> {
  const profile = await scratchProfile(context, extra, options);
  const opened = await scratchAgent(context, profile);
  const session = await opened.agent.newSession({ title: `drill: ${title}` });
  return { ...profile, opened, session };
}
