// `tenax drill [--json]`: the chaos drill. A fault per resilience layer, each in a scratch
// TENAX_HOME against the simulator, and which layer caught it; exit 1 when any was not caught.
import type { Command } from "commander";
import { UsageError } from "../../core/errors.js";
import { REPORT_HEADERS, reportCells, reportSummary } from "../../drill/report.js";
import { type DrillReport, runDrill, type Scenario } from "../../drill/runner.js";
import { DRILL_SCENARIOS } from "../../drill/scenarios.js";
import { terminalCaps } from "../chat/terminal-style.js";
import { DrillProgress } from "../drill-progress.js";
import type { Cli } from "../main.js";
import { type Output, table } from "../output.js";
import { writeStd } from "../std-streams.js";

interface DrillFlags {
  json?: boolean;
  keep?: boolean;
  only?: string;
}

export function registerDrillCommand(program: Command, cli: Cli): void {
  program
    .command("drill")
    .description("inject a fault per resilience layer in a scratch profile and check which layer caught it")
    .option("--json", "print one JSON document")
    .option("--keep", "keep the scratch homes for inspection")
    .option("--only <text>", "run only the faults whose name contains this text")
    .action((flags: DrillFlags) =>
      cli.run(flags.json, async (out) => {
        // The drill never selects a profile: every scenario builds its own scratch home.
        const scenarios = flags.only
          ? DRILL_SCENARIOS.filter((s) => s.fault.includes(flags.only ?? ""))
          : DRILL_SCENARIOS;
        if (scenarios.length === 0) throw new UsageError(`no drill fault matches "${flags.only}"`);
        return drill(out, scenarios, flags.keep === true);
      }),
    );
}

/**
 * Run the scenarios, print the table (or the JSON document); 0 when every row passed, else 1.
 * Each row's start and result go to stderr as they happen (`progress`), in --json mode too.
 */
export async function drill(
  out: Output,
  scenarios: readonly Scenario[],
  keep: boolean,
  progress: DrillProgress = stderrProgress(),
): Promise<number> {
  let report: DrillReport;
  try {
    report = await runDrill(scenarios, {
      keep,
      onStart: (scratch) =>
        out.line(`drill: scratch homes under ${scratch} (your own profiles are not touched)`),
      onRowStart: (start) => progress.started(start),
      onRow: (row) => progress.finished(row),
    });
  } finally {
    progress.close();
  }
  if (out.json) {
    out.document({
      ok: report.ok,
      scratch: report.scratch,
      kept: keep,
      rows: report.rows,
    });
  } else {
    out.line();
    out.line(table(REPORT_HEADERS, report.rows.map(reportCells)));
    out.line();
    for (const line of reportSummary(report)) out.line(line);
    out.line(`scratch homes: ${report.scratch}${keep ? " (kept)" : " (removed)"}`);
  }
  return report.ok ? 0 : 1;
}

/** Progress on stderr: a live line on a terminal, plain lines in a log or a pipe. */
function stderrProgress(): DrillProgress {
  return new DrillProgress({
    write: (text) => writeStd("stderr", text),
    caps: terminalCaps(process.stderr, process.env),
    columns: () => process.stderr.columns ?? 80,
  });
}
