// Whether a chat platform can be delivered to: the one check `tenax cron add`, /api/jobs and the
// gateway make of a `telegram:CHAT` target.
import type { TenaxConfig } from "./schema.js";

/** Why `platform` cannot be used (its section is missing), or null when it is configured. */
export function platformProblem(config: Pick<TenaxConfig, "platforms">, platform: string): string | null {
  const configured = Object.keys(config.platforms).filter(
    (name) => config.platforms[name as keyof TenaxConfig["platforms"]] !== undefined,
  );
  if (configured.includes(platform)) return null;
  return `platforms.${platform} is not in config.yaml (configured: ${configured.length > 0 ? configured.join(", ") : "none"})`;
}
