// The summarizer as a health component: a dependency of its own, which cools down after failures.
import { readCooldown } from "../agent/compression-state.js";
import type { TenaxConfig } from "../config/schema.js";
import type { StoreReads } from "../store/port.js";
import { formatDuration } from "./duration.js";
import type { Component } from "./status.js";

export type CompressionComponent = Component & {
  enabled: boolean;
  failures: number;
  cooldown_until: number | null;
};

/** The summarizer is a dependency of its own: a failing one cools down, and status says until when. */
export async function compressionComponent(
  config: TenaxConfig,
  reader: StoreReads | null,
  now: number,
): Promise<CompressionComponent> {
  const enabled = config.compression.enabled;
  let cooldown: Awaited<ReturnType<typeof readCooldown>> = null;
  try {
    cooldown = reader ? await readCooldown(reader) : null;
  } catch {
    // A store that cannot be read is the store component's news.
  }
  if (cooldown !== null && cooldown.cooldown_until > now) {
    return {
      status: "degraded",
      detail: `the summarizer failed ${cooldown.failures} time${cooldown.failures === 1 ? "" : "s"} in a row (${cooldown.last_error}); automatic compression waits ${formatDuration(cooldown.cooldown_until - now)} more`,
      next: "check the auxiliary compression model in config.yaml; a provider-proven overflow still gets one attempt",
      enabled,
      failures: cooldown.failures,
      cooldown_until: cooldown.cooldown_until,
    };
  }
  return {
    status: "ok",
    detail: enabled
      ? `on at ${Math.round(config.compression.threshold * 100)}% of the window${
          config.auxiliary.compression
            ? `, summarizer ${config.auxiliary.compression.provider}/${config.auxiliary.compression.name}`
            : ", summarized by the primary model"
        }`
      : "off (compression.enabled: false)",
    next: null,
    enabled,
    failures: cooldown?.failures ?? 0,
    cooldown_until: null,
  };
}
