// The approval flow for the MCP tools a server's `approve` lists: the exec gate of tools.exec,
// whose "command" is the tool's name and its arguments. A tool runs once approved; one approved
// for the session, or "always" (which adds the tool's name to tools.exec.allow), runs from then on.
import type { ApprovalBook } from "../approvals/approval-book.js";
import { ExecGate } from "../approvals/exec-gate.js";

export function mcpApprovalGate(book: ApprovalBook, allow: readonly string[]): ExecGate {
  return new ExecGate({
    book,
    mode: "approve (mcp.servers)",
    judge: (command, approved) => {
      const tool = command.split(" ", 1)[0] ?? command;
      const allowed = approved.includes(tool) || allow.includes(tool);
      return {
        decision: allowed ? "run" : "ask",
        reason: allowed
          ? `${tool} is approved`
          : `${tool} is listed under approve in mcp.servers, so it runs only once approved`,
        dangers: [],
        unlisted: [],
        pattern: tool,
      };
    },
  });
}
