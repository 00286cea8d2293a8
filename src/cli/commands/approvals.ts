// `tenax approvals list [--all] [--json]` and `tenax approvals show ID [--json]`: the approval
// records of the profile (what the exec policy held back, who asked, the decision and who made it),
// read through a read-only view of the store, so they work beside a running gateway. Deciding is
// done where the turn waits: the runs API, or the chat that asked.
import type { Command } from "commander";
import {
  type ApprovalRecord,
  effectiveStatus,
  listApprovals,
  readApproval,
} from "../../agent/approvals/approval-records.js";
import { TenaxError } from "../../core/errors.js";
import type { Cli } from "../main.js";
import { formatTime, table } from "../output.js";
import { withReader } from "../store-access.js";

interface ListFlags {
  all?: boolean;
  json?: boolean;
}

/** The record as it stands now: one past its expiry reads as expired. */
function shown(record: ApprovalRecord, now: number): ApprovalRecord {
  return { ...record, status: effectiveStatus(record, now) };
}

export function registerApprovalsCommands(program: Command, cli: Cli): void {
  const approvals = program
    .command("approvals")
    .description("what the exec policy held back: pending approvals, and the decisions made");

  approvals
    .command("list")
    .description("pending approvals (with --all, every decision too), oldest first")
    .option("--all", "also the decided, expired and cancelled ones")
    .option("--json", "print JSON")
    .action((flags: ListFlags) =>
      cli.run(flags.json, (out) =>
        withReader(cli.profile(), async (reader) => {
          const now = Date.now();
          const records = (reader ? await listApprovals(reader) : [])
            .map((r) => shown(r, now))
            .filter((r) => flags.all === true || r.status === "pending");
          if (out.json) {
            out.document({ approvals: records });
            return 0;
          }
          if (records.length === 0) {
            out.line(
              flags.all ? "no approvals yet" : "no approval is pending (--all shows the decided ones)",
            );
            return 0;
          }
          out.line(
            table(
              ["ID", "STATUS", "ASKED", "SESSION", "COMMAND"],
              records.map((r) => [
                r.approval_id,
                r.status,
                formatTime(r.created_at),
                r.session_id,
                r.command.length > 60 ? `${r.command.slice(0, 57)}...` : r.command,
              ]),
            ),
          );
          if (records.some((r) => r.status === "pending")) {
            out.line(
              '\nanswer a run\'s approval with POST /v1/runs/RUN_ID/approvals/APPROVAL_ID {"decision": "approve" | "deny" | "session" | "always"}, or in the tenax chat that asked',
            );
          }
          return 0;
        }),
      ),
    );

  approvals
    .command("show <id>")
    .description("one approval record, whole")
    .option("--json", "print JSON")
    .action((id: string, flags: { json?: boolean }) =>
      cli.run(flags.json, (out) =>
        withReader(cli.profile(), async (reader) => {
          const found = reader ? await readApproval(reader, id) : null;
          if (!found) {
            throw new TenaxError("not_found", `there is no approval ${id}`, {
              hint: "list them with: tenax approvals list --all",
            });
          }
          const record = shown(found, Date.now());
          if (out.json) {
            out.document({ approval: record });
            return 0;
          }
          out.line(`approval ${record.approval_id}: ${record.status}`);
          out.line(`command     ${record.command}`);
          out.line(`tool        ${record.tool}`);
          out.line(`why         ${record.reason}`);
          for (const d of record.dangers) out.line(`danger      ${d.rule}: ${d.why} (${d.text})`);
          out.line(`asked by    ${record.requested_by}, ${formatTime(record.created_at)}`);
          out.line(`session     ${record.session_id}, turn ${record.turn_id}`);
          out.line(`expires     ${formatTime(record.expires_at)}`);
          if (record.pattern !== "")
            out.line(`pattern     ${record.pattern} (what "always" adds to tools.exec.allow)`);
          if (record.decided_at !== null)
            out.line(
              `decided     ${record.decision ?? record.status} by ${record.decided_by ?? "?"}, ${formatTime(record.decided_at)}`,
            );
          return 0;
        }),
      ),
    );
}
