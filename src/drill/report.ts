// How a drill's rows read for people: one table line per fault, and a closing verdict.
import type { DrillReport, DrillRow } from "./runner.js";

export const REPORT_HEADERS = ["fault", "expected layer", "caught by", "time to detect", "result"];

export function reportCells(row: DrillRow): string[] {
  return [
    row.fault,
    row.expected_layer,
    row.caught_by ?? "nobody",
    row.detect_ms === null ? "-" : formatMs(row.detect_ms),
    row.result,
  ];
}

export function formatMs(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${(ms / 1_000).toFixed(1)} s`;
}

/** The lines after the table: each failed row's detail, then the verdict. */
export function reportSummary(report: DrillReport): string[] {
  const failed = report.rows.filter((r) => r.result === "fail");
  const lines = failed.map((r) => `FAILED ${r.fault}: ${r.detail}`);
  lines.push(
    failed.length === 0
      ? `all ${report.rows.length} faults were caught by the layer that should catch them`
      : `${failed.length} of ${report.rows.length} faults were not caught as expected`,
  );
  return lines;
}
