// Whether a pinned `PROVIDER/NAME` (a cron job's --model) names a model this profile's config
// has: a configured provider, and a model it lists (or the primary or a fallback on it). The
// built-in simulator, when no providers are configured, serves its own models.
import { DEFAULT_SIM_MODELS } from "../llm/simulator/types.js";
import { BUILT_IN_SIMULATOR, type TenaxConfig } from "./schema.js";

/** What is wrong with `model` in this config, naming what exists; null when it can be used. */
export function modelProblem(config: TenaxConfig, model: string): string | null {
  const slash = model.indexOf("/");
  if (slash <= 0) return `"${model}" is not a model; pin one as PROVIDER/NAME`;
  const provider = model.slice(0, slash);
  const name = model.slice(slash + 1);
  const providers = Object.keys(config.providers);
  if (providers.length === 0) {
    const served = Object.keys(DEFAULT_SIM_MODELS);
    if (provider !== BUILT_IN_SIMULATOR)
      return `"${provider}" is not a configured provider: no providers are configured, only the built-in simulator (${served.map((m) => `${BUILT_IN_SIMULATOR}/${m}`).join(", ")})`;
    if (served.includes(name)) return null;
    return `"${name}" is not a model of the built-in simulator (it serves: ${served.join(", ")})`;
  }
  const settings = config.providers[provider];
  if (settings === undefined)
    return `"${provider}" is not a configured provider (configured: ${providers.join(", ")})`;
  const known = new Set(Object.keys(settings.models));
  if (known.size === 0 && settings.type === "simulator")
    for (const m of Object.keys(DEFAULT_SIM_MODELS)) known.add(m);
  for (const target of [config.model, ...config.fallback])
    if (target?.provider === provider) known.add(target.name);
  if (known.has(name)) return null;
  const listed = [...known].sort();
  return `"${name}" is not a model of provider ${provider} (${listed.length > 0 ? `its models: ${listed.join(", ")}` : "it lists none"}); list it under providers.${provider}.models`;
}
