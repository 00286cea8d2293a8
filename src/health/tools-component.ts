// The agent's safety boundary as a health component (`tools`): the exec policy and the file roots in
// force for the profile, and the approvals waiting for someone. A pending approval is no fault
// (the component stays ok) but it is work for the operator, so it is named with the next command.
import { effectiveStatus, listPendingApprovals } from "../agent/approvals/approval-records.js";
import type { TenaxConfig } from "../config/schema.js";
import { tenaxCommand } from "../profile/command-hint.js";
import type { ProfilePaths } from "../profile/paths.js";
import type { StoreReads } from "../store/port.js";
import type { Component } from "./status.js";

export interface PendingApproval {
  approval_id: string;
  session_id: string;
  command: string;
  reason: string;
  requested_by: string;
  expires_at: number;
}

export interface ToolsComponent extends Component {
  exec_mode: TenaxConfig["tools"]["exec"]["mode"];
  /** tools.exec.allow: the patterns that run without an approval. */
  allow: string[];
  approval_timeout_s: number;
  file_mode: TenaxConfig["tools"]["files"]["mode"];
  roots: string[];
  /** Approvals waiting for a decision, oldest first. */
  pending: PendingApproval[];
}

const EXEC_WORDS: Record<ToolsComponent["exec_mode"], string> = {
  deny: "commands: deny (none run)",
  allowlist: "commands: allowlist (read-only and allow-listed run, the rest are refused)",
  ask: "commands: ask (read-only and allow-listed run, the rest wait for an approval)",
  full: "commands: full (every command runs, dangerous ones too)",
};

export async function toolsComponent(
  paths: ProfilePaths,
  config: TenaxConfig,
  reader: StoreReads | null,
  now: number,
): Promise<ToolsComponent> {
  const { exec, files } = config.tools;
  let pending: PendingApproval[] = [];
  try {
    pending = (reader ? await listPendingApprovals(reader) : [])
      .filter((r) => effectiveStatus(r, now) === "pending")
      .map((r) => ({
        approval_id: r.approval_id,
        session_id: r.session_id,
        command: r.command,
        reason: r.reason,
        requested_by: r.requested_by,
        expires_at: r.expires_at,
      }));
  } catch {
    // A store that cannot be read is the store component's news.
  }
  const fileWords =
    files.mode === "full"
      ? "files: full (anywhere but secret files)"
      : `files: the working folder${files.roots.length > 0 ? ` and ${files.roots.length} root${files.roots.length === 1 ? "" : "s"}` : " only"}`;
  const allowWords =
    exec.allow.length > 0 ? `, ${exec.allow.length} allow pattern${exec.allow.length === 1 ? "" : "s"}` : "";
  const waiting =
    pending.length === 0
      ? ""
      : `; ${pending.length} approval${pending.length === 1 ? "" : "s"} pending (oldest: ${pending[0]?.command ?? ""})`;
  return {
    status: "ok",
    detail: `${EXEC_WORDS[exec.mode]}${allowWords}; ${fileWords}${waiting}`,
    next: pending.length === 0 ? null : tenaxCommand(paths.name, ["approvals", "list"]),
    exec_mode: exec.mode,
    allow: [...exec.allow],
    approval_timeout_s: exec.approval_timeout,
    file_mode: files.mode,
    roots: [...files.roots],
    pending,
  };
}
