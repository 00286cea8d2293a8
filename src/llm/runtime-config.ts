// What the model runtime reads of the configuration: the providers, the primary model, the
// fallback and auxiliary chains and the attempt budget. config/schema.ts's TenaxConfig is one of
// these (the compiler checks it wherever a runtime is built from it), so llm/ needs nothing of config/.
import type { ModelLimits } from "./model-call.js";
import type { AuxiliaryTask } from "./route-events.js";
import type { SimStep } from "./simulator/steps.js";

export const PROVIDER_TYPES = ["openai", "anthropic", "simulator"] as const;
export type ProviderType = (typeof PROVIDER_TYPES)[number];

export interface ModelTargetSettings {
  provider: string;
  name: string;
}

/** A provider's deadlines, in seconds. */
export interface ProviderTimeoutSettings {
  connect: number;
  first_byte: number;
  idle: number;
  total: number;
}

export interface ProviderSettings {
  type: ProviderType;
  base_url?: string | undefined;
  api_keys?: string[] | undefined;
  max_concurrency: number;
  models: Record<string, ModelLimits>;
  timeouts: ProviderTimeoutSettings;
  /** Simulator only: steps queued when the in-process simulator starts. */
  script?: SimStep[] | undefined;
}

export interface AuxiliaryTaskSettings extends ModelTargetSettings {
  /** Seconds. */
  timeout: number;
  fallback: ModelTargetSettings[];
}

export interface RuntimeConfig {
  model?: ModelTargetSettings | undefined;
  providers: Record<string, ProviderSettings>;
  fallback: ModelTargetSettings[];
  auxiliary: Partial<Record<AuxiliaryTask, AuxiliaryTaskSettings | undefined>>;
  retry: { max_attempts: number };
}

/** True when no provider is configured, so the built-in simulator answers every model call. */
export function usesBuiltInSimulator(config: Pick<RuntimeConfig, "providers">): boolean {
  return Object.keys(config.providers).length === 0;
}
