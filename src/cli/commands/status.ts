// `tenax status [--json]`: each layer of this profile, which one is broken and what to run next.
// Exit 0 healthy, 1 degraded, 2 down. It reads the store read-only and starts nothing.
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { describeLogins, type LoginSummary, loginSummary } from "../../dashboard/auth/login-summary.js";
import { lookAtGateway } from "../../health/gateway-status.js";
import { collectStatus, exitCodeFor, openForStatus, type StatusReport } from "../../health/status.js";
import type { Cli } from "../main.js";

export function registerStatusCommand(program: Command, cli: Cli): void {
  program
    .command("status")
    .description(
      "health of each layer of this profile: gateway, store, providers, credentials, compression, tools (the exec policy, file roots, pending approvals), cron (jobs failing, deliveries given up, runs waiting), platforms (chat connections, messages waiting or given up), instances (the profile's gateways on a shared store, alive or gone, and their clocks), scheduler",
    )
    .option("--json", "print one JSON document")
    .action((flags: { json?: boolean }) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        const { config, warnings } = loadConfig(paths);
        for (const warning of warnings) out.warn(warning);
        const opened = await openForStatus(paths, config);
        let report: StatusReport;
        let logins: LoginSummary;
        try {
          const now = Date.now();
          report = await collectStatus({
            paths,
            config,
            ...opened,
            now,
            gateway: () => lookAtGateway(paths, config),
          });
          logins = await loginSummary(opened.reader, config.dashboard.auth.mode, now);
        } finally {
          opened.reader?.close();
        }
        if (out.json) out.document({ ...report, dashboard_logins: logins });
        else {
          for (const line of render(report)) out.line(line);
          out.line(`dashboard logins: ${describeLogins(logins)}`);
        }
        return exitCodeFor(report.status);
      }),
    );
}

function render(report: StatusReport): string[] {
  const broken = Object.entries(report.components)
    .filter(([, c]) => c !== undefined && c.status !== "ok")
    .map(([name, c]) => `${name} ${c?.status}`);
  const lines = [
    `Tenax profile '${report.profile}': ${report.status}${broken.length > 0 ? ` (${broken.join(", ")})` : ""}`,
  ];
  for (const [name, component] of Object.entries(report.components)) {
    lines.push(`  ${name.padEnd(12)} ${component.status.padEnd(9)} ${component.detail}`);
    // Under its own component: each model's circuit breaker (as /health lists it), each key.
    if (name === "providers") lines.push(...circuitLines(report));
    if (name === "credentials") lines.push(...keyLines(report));
  }
  for (const [name, component] of Object.entries(report.components)) {
    if (component?.next) lines.push(`next (${name}): ${component.next}`);
  }
  return lines;
}

function circuitLines(report: StatusReport): string[] {
  return report.components.providers.models.map((m) => {
    const retry =
      m.circuit === "open" && m.retry_at !== null ? `, probe at ${new Date(m.retry_at).toISOString()}` : "";
    const why =
      m.circuit === "closed" ? "" : ` (${m.failures} failures${m.reason ? `, ${m.reason}` : ""}${retry})`;
    return `    ${m.provider}/${m.model}: circuit ${m.circuit}${why}`;
  });
}

function keyLines(report: StatusReport): string[] {
  return report.components.credentials.providers.flatMap((provider) =>
    provider.keyed
      ? provider.keys.map((key) => {
          const state = key.status === "ok" ? "ok" : `${key.status} (${key.reason ?? "?"})`;
          return `    ${provider.provider} key ${key.position + 1}: ${key.fingerprint} ${state}`;
        })
      : [`    ${provider.provider}: no key (the server needs none)`],
  );
}
