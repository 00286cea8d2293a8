// `tenax checkpoints list|diff|restore [--project DIR] [ID]`: the snapshots Tenax took of a project
// folder before the agent changed it. The store is shared by every profile (TENAX_HOME/checkpoints).
import { resolve } from "node:path";
import type { Command } from "commander";
import { describeRestore } from "../../checkpoints/describe.js";
import { CheckpointStore, DEFAULT_MAX_SNAPSHOTS } from "../../checkpoints/store.js";
import { loadConfig } from "../../config/load.js";
import { errorMessage } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { ProfilePaths } from "../../profile/paths.js";
import type { Cli } from "../main.js";
import { formatTime, type Output, table } from "../output.js";

interface Flags {
  project?: string;
  json?: boolean;
}

const ID_HELP = "a checkpoint id (or a unique prefix), or N for the Nth newest (default 1, the latest)";

export function registerCheckpointsCommands(program: Command, cli: Cli): void {
  const checkpoints = program
    .command("checkpoints")
    .description("list, diff and restore the snapshots taken of a project before the agent changed it");

  checkpoints
    .command("list")
    .description("the project's checkpoints, newest first")
    .option("--project <dir>", "the project folder (default: the current folder)")
    .option("--json", "print one JSON document")
    .action((flags: Flags) =>
      cli.run(flags.json, async (out) => {
        const project = projectOf(flags);
        const list = await storeFor(cli.profile()).list(project);
        if (out.json) {
          out.document({ project, checkpoints: list.map((snapshot, i) => ({ n: i + 1, ...snapshot })) });
          return 0;
        }
        if (list.length === 0) {
          out.line(`no checkpoints of ${project} yet`);
          out.line(
            "they are taken when the agent changes files with checkpoints on (tenax chat --checkpoints)",
          );
          return 0;
        }
        out.line(`checkpoints of ${list[0]?.project ?? project}, newest first:`);
        const rows = list.map((s, i) => [
          String(i + 1),
          s.id,
          formatTime(s.created_at),
          String(s.files),
          s.reason,
        ]);
        out.line(table(["N", "ID", "TAKEN (UTC)", "FILES", "REASON"], rows));
        return 0;
      }),
    );

  checkpoints
    .command("diff [id]")
    .description("what changed in the project since a checkpoint (a unified diff)")
    .option("--project <dir>", "the project folder (default: the current folder)")
    .option("--json", "print one JSON document")
    .addHelpText("after", `\nID: ${ID_HELP}\n`)
    .action((id: string | undefined, flags: Flags) =>
      cli.run(flags.json, async (out) => {
        const project = projectOf(flags);
        const store = storeFor(cli.profile());
        const snapshot = await store.find(project, id ?? "1");
        const diff = await store.diff(project, snapshot.id);
        if (out.json) {
          out.document({ project: snapshot.project, checkpoint: snapshot, diff });
          return 0;
        }
        if (diff === "") out.line(`${snapshot.project} matches checkpoint ${snapshot.id}: no differences`);
        else process.stdout.write(diff);
        return 0;
      }),
    );

  checkpoints
    .command("restore [id]")
    .description("make the project's files match a checkpoint; the present is snapshotted first")
    .option("--project <dir>", "the project folder (default: the current folder)")
    .option("--json", "print one JSON document")
    .addHelpText(
      "after",
      `\nID: ${ID_HELP}\nSecrets, dependency and build folders and the project's .git are never touched.\n`,
    )
    .action((id: string | undefined, flags: Flags) =>
      cli.run(flags.json, async (out) => {
        const project = projectOf(flags);
        const paths = cli.profile();
        const store = storeFor(paths, maxSnapshots(paths, out));
        const result = await store.restore(project, id ?? "1");
        if (out.json) {
          out.document({ project: result.restored.project, ...result });
          return 0;
        }
        const undo = result.safety
          ? tenaxCommand(paths.name, ["checkpoints", "restore", result.safety.id, "--project", project])
          : undefined;
        for (const line of describeRestore(result, undo)) out.line(line);
        return 0;
      }),
    );
}

function projectOf(flags: Flags): string {
  return resolve(flags.project ?? process.cwd());
}

function storeFor(paths: ProfilePaths, max?: number): CheckpointStore {
  return new CheckpointStore({ home: paths.home, ...(max === undefined ? {} : { maxSnapshots: max }) });
}

/** The profile's snapshot limit; a broken config must not stand in the way of a restore. */
function maxSnapshots(paths: ProfilePaths, out: Output): number {
  try {
    return loadConfig(paths).config.checkpoints.max_snapshots;
  } catch (error) {
    out.warn(
      `${errorMessage(error).split("\n")[0]}; keeping at most ${DEFAULT_MAX_SNAPSHOTS} checkpoints of this project`,
    );
    return DEFAULT_MAX_SNAPSHOTS;
  }
}
