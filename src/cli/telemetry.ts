// Traces for the commands that run turns in their own process (`tenax chat`, `tenax cron run` and
// `tick`): started from config.yaml and the OTEL_* variables before the agent opens, flushed
// (bounded) when the command ends. Off, nothing is loaded.
import type { TenaxConfig } from "../config/schema.js";
import { startTracing, type Tracing } from "../core/trace-start.js";
import { VERSION } from "./main.js";

export function startCommandTracing(
  config: TenaxConfig,
  warn: (line: string) => void,
): Promise<Tracing | null> {
  return startTracing(config.telemetry, { version: VERSION, report: warn });
}
