// What `/compress` tells the user: what the compressor did in this call, in its own words with its
// figures (compressed, dropped, nothing to do and why, or failed and why), since no turn is
// running to show its events as status lines.
import type { ManualCompression } from "../../agent/agent.js";
import type { CompressionEvent } from "../../agent/compression.js";

export interface CompressOutcome {
  /** error: nothing was compressed because something failed. */
  level: "info" | "error";
  lines: string[];
}

export function describeCompression(result: ManualCompression): CompressOutcome {
  const lines = result.events.flatMap(lineOf);
  const failed = result.events.some((e) => e.type === "compression_failed");
  if (result.compaction === null) {
    if (lines.length === 0)
      return { level: "error", lines: ["nothing was compressed: no compressor runs in this chat"] };
    if (failed)
      return {
        level: "error",
        lines: [...lines, "nothing was compressed; the conversation goes on as it was"],
      };
  }
  return { level: "info", lines };
}

function lineOf(event: CompressionEvent): string[] {
  const said = event.message.replace(/^compression: /, "");
  switch (event.type) {
    case "compression_started":
      return [];
    case "compression_done":
      return [`${said} (summary by ${event.model})`];
    case "compression_dropped":
      return [said];
    case "compression_failed":
      return [`compression failed: ${said}`];
    case "compression_skipped":
      return [`nothing was compressed: ${said}`];
    default: {
      const never: never = event;
      return [String((never as { message?: unknown }).message)];
    }
  }
}
