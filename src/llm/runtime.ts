// From the configuration (RuntimeConfig, what a loaded config.yaml gives) to a working ModelRouter: one client, key pool and concurrency limit per
// provider, the in-process simulator started where config asks for it, the fallback and auxiliary
// chains. Whoever builds it closes it (that stops the simulators it started).

import { type Deps, defaultDeps } from "../core/deps.js";
import { loadCode } from "../core/load-code.js";
import { Redactor } from "../core/redact.js";
import { type CredentialStateStore, MemoryCredentialLedger } from "../store/credential-ledger.js";
import type { CircuitBreakers } from "./breaker.js";
import { ConcurrencyLimiter } from "./concurrency.js";
import { CredentialPool, type PoolTimings } from "./credential-pool.js";
import type { ModelLimits, ProviderRuntime } from "./model-call.js";
import type { Provider } from "./provider.js";
import { createAnthropicProvider } from "./providers/anthropic.js";
import { createOpenAIProvider } from "./providers/openai.js";
import { redactingProvider } from "./redacting-provider.js";
import type { AuxiliaryTask, CallOutcome, StatusEvent, Target } from "./route-events.js";
import { type AuxiliaryRoute, ModelRouter } from "./router.js";
import {
  type ModelTargetSettings,
  type ProviderSettings,
  type RuntimeConfig,
  usesBuiltInSimulator,
} from "./runtime-config.js";
import type { Simulator } from "./simulator/server.js";
import { DEFAULT_SIM_MODELS } from "./simulator/types.js";
import type { Timeouts } from "./timeouts.js";

export const DEFAULT_BASE_URLS = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com",
} as const;

/** The primary model when config names none: the built-in simulator. */
export const BUILT_IN_TARGET: Target = { provider: "simulator", model: "echo" };

export interface RuntimeOptions {
  /** The shared key ledger (the profile's store); an in-memory one when left out. */
  ledger?: CredentialStateStore;
  deps?: Partial<Deps>;
  poolTimings?: Partial<PoolTimings>;
  onStatus?: (event: StatusEvent) => void;
  /** The profile's secrets, redacted from everything a provider returns (text, tool calls, errors). */
  redactor?: Redactor;
  /** How every model call ended (provider health). */
  onOutcome?: (outcome: CallOutcome) => void;
  /** The models' circuit breakers (shared through the profile's store); none: no breaker. */
  breaker?: CircuitBreakers;
}

export interface ModelRuntime {
  router: ModelRouter;
  /** The in-process simulators started for this runtime, by provider name. */
  simulators: ReadonlyMap<string, Simulator>;
  /** True when no provider is configured and the built-in simulator answers. */
  builtIn: boolean;
  close(): Promise<void>;
}

export async function createModelRuntime(
  config: RuntimeConfig,
  options: RuntimeOptions = {},
): Promise<ModelRuntime> {
  const deps: Deps = { ...defaultDeps, ...options.deps };
  const ledger = options.ledger ?? new MemoryCredentialLedger();
  const builtIn = usesBuiltInSimulator(config);
  const providers: Record<string, ProviderSettings> = builtIn
    ? {
        [BUILT_IN_TARGET.provider]: {
          type: "simulator",
          max_concurrency: 8,
          models: {},
          timeouts: defaultTimeouts(),
        },
      }
    : config.providers;

  const simulators = new Map<string, Simulator>();
  const runtimes = new Map<string, ProviderRuntime>();
  try {
    for (const [name, settings] of Object.entries(providers)) {
      const { provider, models, baseURL } = await createClient(name, settings, simulators);
      runtimes.set(name, {
        name,
        provider: redactingProvider(provider, options.redactor ?? Redactor.none),
        pool: new CredentialPool(name, settings.api_keys ?? null, {
          ledger,
          ...(options.poolTimings ? { timings: options.poolTimings } : {}),
        }),
        base_url: baseURL,
        limiter: new ConcurrencyLimiter(settings.max_concurrency),
        models,
        system: settings.type,
      });
    }
  } catch (error) {
    await Promise.all([...simulators.values()].map((s) => s.close()));
    throw error;
  }

  const router = new ModelRouter({
    providers: runtimes,
    primary: config.model ? asTarget(config.model) : BUILT_IN_TARGET,
    fallback: config.fallback.map(asTarget),
    auxiliary: auxiliaryRoutes(config),
    deps,
    maxAttempts: config.retry.max_attempts,
    ...(options.onStatus ? { onStatus: options.onStatus } : {}),
    ...(options.onOutcome ? { onOutcome: options.onOutcome } : {}),
    ...(options.breaker ? { breaker: options.breaker } : {}),
  });
  return {
    router,
    simulators,
    builtIn,
    close: async () => {
      await Promise.all([...simulators.values()].map((s) => s.close()));
    },
  };
}

async function createClient(
  name: string,
  settings: ProviderSettings,
  simulators: Map<string, Simulator>,
): Promise<{ provider: Provider; models: Record<string, ModelLimits>; baseURL: string }> {
  const timeouts = toTimeouts(settings.timeouts);
  const models: Record<string, ModelLimits> = { ...settings.models };
  switch (settings.type) {
    case "openai": {
      const baseURL = settings.base_url ?? DEFAULT_BASE_URLS.openai;
      return { provider: createOpenAIProvider({ name, baseURL, timeouts }), models, baseURL };
    }
    case "anthropic": {
      const baseURL = settings.base_url ?? DEFAULT_BASE_URLS.anthropic;
      return { provider: createAnthropicProvider({ name, baseURL, timeouts }), models, baseURL };
    }
    case "simulator": {
      // A simulator serves the models config lists, or its defaults; their windows are known exactly.
      const served =
        Object.keys(settings.models).length > 0
          ? Object.fromEntries(
              Object.entries(settings.models).map(([m, l]) => [m, { context_window: l.context_window }]),
            )
          : DEFAULT_SIM_MODELS;
      for (const [model, sim] of Object.entries(served)) {
        models[model] ??= { context_window: sim.context_window, max_output_tokens: 4096 };
      }
      let baseURL = settings.base_url;
      if (baseURL === undefined) {
        // The simulator's HTTP server is loaded only by a runtime that starts one: a command that
        // only describes the providers (tenax status) never loads it.
        const { startSimulator } = await loadCode("the simulator", () => import("./simulator/server.js"));
        const sim = await startSimulator({ models: { ...served } });
        simulators.set(name, sim);
        if (settings.script) sim.script(settings.script);
        baseURL = sim.url;
      }
      return { provider: createOpenAIProvider({ name, baseURL, timeouts }), models, baseURL };
    }
    default: {
      const never: never = settings.type;
      throw new RangeError(`unknown provider type ${String(never)}`);
    }
  }
}

function asTarget(target: ModelTargetSettings): Target {
  return { provider: target.provider, model: target.name };
}

function auxiliaryRoutes(config: RuntimeConfig): Partial<Record<AuxiliaryTask, AuxiliaryRoute>> {
  const routes: Partial<Record<AuxiliaryTask, AuxiliaryRoute>> = {};
  for (const task of ["compression", "title", "vision"] as const) {
    const settings = config.auxiliary[task];
    if (!settings) continue;
    routes[task] = {
      chain: [asTarget(settings), ...settings.fallback.map(asTarget)],
      timeout_ms: Math.round(settings.timeout * 1000),
    };
  }
  return routes;
}

function toTimeouts(seconds: ProviderSettings["timeouts"]): Timeouts {
  const ms = (s: number) => Math.max(1, Math.round(s * 1000));
  return {
    connect_ms: ms(seconds.connect),
    first_byte_ms: ms(seconds.first_byte),
    idle_ms: ms(seconds.idle),
    total_ms: ms(seconds.total),
  };
}

function defaultTimeouts(): ProviderSettings["timeouts"] {
  return { connect: 10, first_byte: 60, idle: 60, total: 600 };
}
