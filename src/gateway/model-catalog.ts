// The model ids the gateway answers to: `tenax` (the agent, a whole turn with its tools) and
// `PROVIDER/NAME` for every model a configured provider lists (and the primary and fallback chain
// when a provider does not list them), with their context windows. GET /v1/models shows it; the
// chat route dispatches on it.
import { ConfigError } from "../core/errors.js";
import type { Target } from "../llm/route-events.js";
import type { ModelRouter } from "../llm/router.js";

export const AGENT_MODEL = "tenax";

export interface ModelInfo {
  id: string;
  object: "model";
  created: number;
  owned_by: string;
  description: string;
  /** Tokens; null when config does not list the model's window. */
  context_window: number | null;
  max_output_tokens: number | null;
}

/** Where a chat goes: the agent, or one model call to a target. */
export type Dispatch = { mode: "agent" } | { mode: "model"; id: string; target: Target };

export class ModelCatalog {
  private readonly targets = new Map<
    string,
    { target: Target; window: number | null; output: number | null }
  >();
  private readonly fallbackTo: Dispatch | null;

  constructor(
    private readonly router: ModelRouter,
    /** gateway.default_model: where an unknown id goes (an error at start when it is unknown itself). */
    defaultModel?: string,
  ) {
    for (const runtime of router.runtimes())
      for (const [name, limits] of Object.entries(runtime.models))
        this.add({ provider: runtime.name, model: name }, limits.context_window, limits.max_output_tokens);
    for (const target of [router.primary, ...router.fallbackChain]) this.add(target, null, null);
    if (defaultModel === undefined) this.fallbackTo = null;
    else {
      const known = this.resolve(defaultModel);
      if (known === null)
        throw new ConfigError(
          `gateway.default_model is ${JSON.stringify(defaultModel)}, which is no model of this gateway; use one of ${this.ids().join(", ")}`,
        );
      this.fallbackTo = known;
    }
  }

  /** Every id, `tenax` first. */
  ids(): string[] {
    return [AGENT_MODEL, ...this.targets.keys()];
  }

  /** The id's entry for /v1/models, or null. */
  info(id: string, created: number): ModelInfo | null {
    if (id === AGENT_MODEL) {
      const primary = this.router.limits(this.router.primary);
      return {
        id,
        object: "model",
        created,
        owned_by: "tenax",
        description: `the Tenax agent: a whole turn with Tenax's tools, on the primary model ${label(this.router.primary)} and its fallback chain`,
        context_window: primary?.context_window ?? null,
        max_output_tokens: primary?.max_output_tokens ?? null,
      };
    }
    const entry = this.targets.get(id);
    if (!entry) return null;
    return {
      id,
      object: "model",
      created,
      owned_by: entry.target.provider,
      description: `one model call to ${entry.target.model} of provider ${entry.target.provider}, through Tenax's retries, key pool and fallback, with the client's own tools`,
      context_window: entry.window,
      max_output_tokens: entry.output,
    };
  }

  list(created: number): ModelInfo[] {
    return this.ids().flatMap((id) => this.info(id, created) ?? []);
  }

  /** The id a client sent (absent: the agent) as a dispatch; null for an unknown id. */
  resolve(id: string | undefined): Dispatch | null {
    if (id === undefined || id === AGENT_MODEL) return { mode: "agent" };
    const entry = this.targets.get(id);
    return entry ? { mode: "model", id, target: entry.target } : null;
  }

  /** As resolve, with gateway.default_model for an unknown id. */
  dispatch(id: string | undefined): Dispatch | null {
    return this.resolve(id) ?? this.fallbackTo;
  }

  private add(target: Target, window: number | null, output: number | null): void {
    const id = label(target);
    if (!this.targets.has(id)) this.targets.set(id, { target, window, output });
  }
}

function label(target: Target): string {
  return `${target.provider}/${target.model}`;
}
