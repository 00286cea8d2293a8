// What the durable audit trail costs a process: AuditTrail.record of a retry event (the line
// shaped, redacted by value against 20 secrets, and appended: open with O_APPEND, one write,
// close), 20,000 times into a fresh file with the default rotation (10 MB, 5 kept). Run it with
// `npx tsc -p bench/tsconfig.json && node dist-bench/bench/audit-append.js`.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditTrail } from "../src/agent/audit-trail.js";
import { Redactor } from "../src/core/redact.js";

export interface AuditFigures {
  lines: number;
  wall_us_per_line: number;
  cpu_us_per_line: number;
}

export function runAuditBench(lines = 20_000): AuditFigures {
  const dir = mkdtempSync(join(tmpdir(), "tenax-audit-bench-"));
  try {
    const secrets = Array.from({ length: 20 }, (_, i) => ({
      name: `providers.p${i}.api_keys[0]`,
      value: `sk-bench-${i.toString().padStart(2, "0")}-${"x".repeat(24)}`,
    }));
    const trail = new AuditTrail(join(dir, "events.jsonl"), {
      source: "gateway",
      maxBytes: 10 * 1024 * 1024,
      keep: 5,
      redactor: new Redactor(secrets),
    });
    trail.turnEvent("s_bench", { type: "turn_started", session_id: "s_bench", turn_id: "t_bench" });
    const cpu = process.cpuUsage();
    const start = process.hrtime.bigint();
    for (let i = 0; i < lines; i++) {
      trail.turnEvent("s_bench", {
        type: "retry",
        layer: "retry",
        provider: "sim",
        model: "echo",
        reason: "server_error",
        attempt: (i % 3) + 1,
        max_attempts: 4,
        elapsed_ms: 1500,
        context_tokens: 1833,
        retry_after_ms: null,
        status: 503,
        message: "simulated error 503",
        delay_ms: 700,
        next_attempt_at: 0,
      });
    }
    const wallNs = Number(process.hrtime.bigint() - start);
    const used = process.cpuUsage(cpu);
    return {
      lines,
      wall_us_per_line: Math.round(wallNs / lines / 10) / 100,
      cpu_us_per_line: Math.round(((used.user + used.system) / lines) * 100) / 100,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(runAuditBench()));
