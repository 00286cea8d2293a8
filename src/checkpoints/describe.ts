// Checkpoint results in words, one line each, for the chat's status lines and the CLI.
import type { RestoreResult, SnapshotResult } from "./store.js";
import type { ExcludedEntry } from "./walk.js";

const SHOWN = 5;

/** "checkpoint 1a2b3c4d5e6f of /p (12 files; left out: .env (secret), node_modules (dependencies))". */
export function describeSnapshot(project: string, result: SnapshotResult): string {
  switch (result.status) {
    case "created":
      return `checkpoint ${result.snapshot.id} of ${project} (${files(result.snapshot.files)}${leftOut(result.excluded)})`;
    case "unchanged":
      return `checkpoint ${result.snapshot.id} of ${project} still holds the present files${leftOut(result.excluded, " (", ")")}`;
    case "skipped":
      return `no checkpoint of ${project}: ${result.why}`;
    default: {
      const never: never = result;
      return String(never);
    }
  }
}

/** What a restore did, file by file; `undo` is the command (or slash command) that undoes it. */
export function describeRestore(result: RestoreResult, undo?: string): string[] {
  const { restored, safety, changes } = result;
  const lines = [
    changes.length === 0
      ? `${restored.project} already matched checkpoint ${restored.id}; nothing changed`
      : `restored ${restored.project} to checkpoint ${restored.id} (${restored.reason}): ${count(changes, "restored")} restored, ${count(changes, "recreated")} recreated, ${count(changes, "removed")} removed`,
  ];
  for (const change of changes.slice(0, 20)) lines.push(`  ${change.action.padEnd(9)} ${change.path}`);
  if (changes.length > 20) lines.push(`  ... and ${changes.length - 20} more`);
  if (safety !== null && changes.length > 0) {
    lines.push(
      `the files as they were are checkpoint ${safety.id}; to undo this restore, run: ${undo ?? `restore ${safety.id}`}`,
    );
  }
  return lines;
}

function count(changes: RestoreResult["changes"], action: string): number {
  return changes.filter((change) => change.action === action).length;
}

function files(n: number): string {
  return n === 1 ? "1 file" : `${n} files`;
}

function leftOut(excluded: ExcludedEntry[] | undefined, open = "; ", close = ""): string {
  // The project's own .git is always left out; naming it every time would only be noise.
  const named = (excluded ?? []).filter((entry) => entry.kind !== "version control");
  if (named.length === 0) return "";
  const shown = named.slice(0, SHOWN).map((entry) => `${entry.path} (${entry.kind})`);
  const more = named.length > SHOWN ? " and more" : "";
  return `${open}left out: ${shown.join(", ")}${more}${close}`;
}
