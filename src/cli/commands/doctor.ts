// `tenax doctor [--fix] [--json]`: checks this profile's installation and, with --fix, repairs
// what is safe to repair and says what it did. Exit 0 when nothing fails, 1 when something does.
import { execFileSync } from "node:child_process";
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { type DoctorReport, doctorExitCode, runDoctor } from "../../health/doctor.js";
import { tryBind } from "../../health/doctor-ports.js";
import type { Cli } from "../main.js";
import { withWriter } from "../store-access.js";

export function registerDoctorCommand(program: Command, cli: Cli): void {
  program
    .command("doctor")
    .description(
      "check config, ports, permissions, store, stale files and turns, service unit, SQLite, git, policy, sandbox",
    )
    .option("--fix", "repair what is safe to repair (file modes, stale pid and lock files, dead turns)")
    .option("--json", "print one JSON document")
    .action((flags: { fix?: boolean; json?: boolean }) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        const report = await runDoctor({
          paths,
          fix: flags.fix === true,
          loadConfig: () => loadConfig(paths),
          deps: {
            version,
            tryBind,
            withWriter: (body) => withWriter(paths, body),
            env: process.env,
            now: Date.now,
          },
        });
        if (out.json) out.document(report);
        else for (const line of render(report)) out.line(line);
        return doctorExitCode(report);
      }),
    );
}

function version(command: string): string | null {
  try {
    return execFileSync(command, ["--version"], {
      encoding: "utf8",
      timeout: 5000,
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
}

function render(report: DoctorReport): string[] {
  const lines = [`Tenax doctor, profile '${report.profile}': ${report.status}`];
  for (const check of report.checks) {
    lines.push(`  ${check.status.padEnd(5)} ${check.name.padEnd(16)} ${check.detail}`);
    if (check.fixed) lines.push(`        fixed: ${check.fixed}`);
    else if (check.fix) lines.push(`        --fix would ${check.fix}`);
  }
  for (const check of report.checks) {
    if (check.next && check.status !== "ok") lines.push(`next (${check.name}): ${check.next}`);
  }
  return lines;
}
