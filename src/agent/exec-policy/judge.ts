// The exec policy's judgement of one command line: run it, ask an operator first, or refuse it,
// with the reason the model and the operator read.
import { analyse } from "./analyse.js";
import { commandDangers } from "./dangers.js";
import { allows, suggestPattern } from "./patterns.js";
import { isReadOnlySimple } from "./read-only.js";
import { secretPathDangers } from "./secret-paths.js";
import type { Danger, ExecPolicy, Judgement } from "./types.js";

function quote(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return JSON.stringify(line.length > 120 ? `${line.slice(0, 117)}...` : line);
}

function dangerReason(danger: Danger): string {
  return `${quote(danger.text)} is dangerous (${danger.rule}: ${danger.why}), so it needs an approval even when allow-listed; only tools.exec.mode full runs it without one.`;
}

function unlistedReason(
  unlisted: string,
  parsed: boolean,
  pattern: string,
  mode: "ask" | "allowlist",
): string {
  const what = parsed
    ? `${quote(unlisted)} is neither read-only nor matched by a pattern in tools.exec.allow`
    : `${quote(unlisted)} could not be read as a shell command, so no pattern can allow it`;
  const add =
    pattern === "" || !parsed ? "" : `add a pattern such as ${JSON.stringify(pattern)} to tools.exec.allow`;
  if (mode === "ask")
    return `${what}, so it needs an approval${add === "" ? "" : ` (${add} to run it without one)`}.`;
  const open =
    add === ""
      ? "set tools.exec.mode to ask to approve it"
      : `${add}, or set tools.exec.mode to ask to approve it`;
  return `${what}, and tools.exec.mode is allowlist, so it is refused (${open}).`;
}

/**
 * Judges a command line under a policy. `approved` adds patterns approved as "always" outside
 * tools.exec.allow (for this session, say); like those of tools.exec.allow they never make a
 * dangerous command run without an approval.
 */
export function judgeCommand(
  command: string,
  policy: ExecPolicy,
  approved: readonly string[] = [],
): Judgement {
  if (policy.mode === "full")
    return {
      decision: "run",
      reason: "tools.exec.mode is full, so every command runs without an approval.",
      dangers: [],
      unlisted: [],
      pattern: "",
    };
  if (policy.mode === "deny")
    return {
      decision: "deny",
      reason:
        "Commands are refused: tools.exec.mode is deny (set it to allowlist or ask to let commands run).",
      dangers: [],
      unlisted: [],
      pattern: "",
    };
  const found = analyse(command);
  const dangers = [
    ...found.dangers,
    ...found.commands.flatMap(commandDangers),
    ...(policy.place === undefined ? [] : secretPathDangers(found, policy.place)),
  ];
  const patterns = [...policy.allow, ...approved];
  const open = found.commands.filter((c) => !isReadOnlySimple(c) && !allows(c, patterns));
  const unlisted = found.parsed ? [...new Set(open.map((c) => c.text))] : [command];
  const first = open[0] ?? found.commands[0];
  // A dangerous command asks for every run, so no pattern is offered for it: one would not spare
  // the next approval, and the wider ones it used to be ("rm *" for rm -rf ~) let the commands
  // beside it run unasked.
  const pattern = found.parsed && first !== undefined && dangers.length === 0 ? suggestPattern(first) : "";
  const judged = { dangers, unlisted, pattern };
  const firstUnlisted = unlisted[0];
  if (policy.mode === "allowlist" && firstUnlisted !== undefined)
    return {
      decision: "deny",
      reason: unlistedReason(firstUnlisted, found.parsed, pattern, "allowlist"),
      ...judged,
    };
  const danger = dangers[0];
  if (danger !== undefined) return { decision: "ask", reason: dangerReason(danger), ...judged };
  if (firstUnlisted !== undefined)
    return {
      decision: "ask",
      reason: unlistedReason(firstUnlisted, found.parsed, pattern, "ask"),
      ...judged,
    };
  return {
    decision: "run",
    reason: `Every part of the command is read-only or matched by a pattern in tools.exec.allow (tools.exec.mode is ${policy.mode}).`,
    ...judged,
  };
}
