// `tenax sessions recover` and `tenax sessions restore`: the salvage tools of a damaged store.
// Both print what they did and, last, the exact command to run next (absolute paths, quoted, with
// --profile when it is not the default one), so it can be pasted as printed.
import { readdirSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import type { Command } from "commander";
import { UsageError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { recoverStore } from "../../store/recover/recover.js";
import type { RecoveryReport } from "../../store/recover/report.js";
import { restoreStore } from "../../store/recover/restore.js";
import { TABLES } from "../../store/recover/row-shapes.js";
import type { Cli } from "../main.js";
import { type Output, table } from "../output.js";
import { requireSqlite, withSqliteWriter } from "../store-access.js";

interface RecoverFlags {
  source?: string;
  inspectOnly?: boolean;
  output?: string;
  spool?: string;
  forensics?: string;
  json?: boolean;
}

interface RestoreFlags {
  from?: string;
  force?: boolean;
  json?: boolean;
}

export function registerRecoverCommands(sessions: Command, cli: Cli): void {
  sessions
    .command("recover")
    .description("salvage a damaged store into a new one; the damaged files are never modified")
    .option("--source <db>", "the damaged state.db")
    .option("--inspect-only", "report what can be salvaged, writing nothing but a forensic copy")
    .option(
      "--output <new.db>",
      "write every salvageable session, message, turn and record into this new file",
    )
    .option("--spool <dir>", "spool folder to fold in (default: spool/ beside the source)")
    .option("--forensics <dir>", "where the forensic copy goes (default: forensics/ beside the source)")
    .option("--json", "print one JSON document")
    .action((flags: RecoverFlags) =>
      cli.run(flags.json, async (out) => {
        const { source, output } = recoverArgs(flags, cli);
        const report = await recoverStore({
          source,
          output,
          spoolDir: flags.spool,
          forensicsDir: flags.forensics,
          profile: fallbackProfile(cli),
        });
        const next = nextCommand(report, flags);
        if (out.json) out.document({ report, next_command: next.command });
        else printReport(out, report, next);
        return report.complete ? 0 : 1;
      }),
    );

  sessions
    .command("restore")
    .description("put a recovered store in place of this profile's state.db (stop the gateway first)")
    .option("--from <new.db>", "the file `tenax sessions recover --output` wrote")
    .option("--force", "replace state.db even though it changed after it was recovered")
    .option("--json", "print one JSON document")
    .action((flags: RestoreFlags) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        if (flags.from === undefined) {
          throw new UsageError(
            "restore needs --from, the file written by `tenax sessions recover --output`",
            {
              hint: restoreExample(paths),
            },
          );
        }
        requireSqlite(paths, "tenax sessions restore");
        const result = await restoreStore({ paths, from: flags.from, force: flags.force === true });
        // Open the restored store once as its writer: search works again before anyone asks.
        const search = await withSqliteWriter(paths, "tenax sessions restore", (store) =>
          store.index.rebuild("the store was restored"),
        );
        const next = tenaxCommand(paths.name, ["sessions", "list"]);
        if (out.json) {
          out.document({ restore: result, search, next_command: next });
          return result.spool.failed.length === 0 ? 0 : 1;
        }
        out.line(`restored ${result.from} as ${result.restored_to} (integrity ${result.integrity.status})`);
        out.line(`the replaced files are kept in ${result.replaced.dir}`);
        const s = result.spool;
        if (s.moved.length > 0)
          out.line(`spool: ${s.moved.length} file(s) the recovery had folded in moved to spool/replayed`);
        out.line(
          `spool: ${s.records} record(s) written after the recovery replayed (${s.messages} new message(s), ${s.duplicates} already present)`,
        );
        for (const f of s.failed)
          out.warn(`spool file ${f.file} could not be replayed and was left in place: ${f.reason}`);
        out.line(`search index rebuilt: ${search.messages} messages in ${search.duration_ms} ms`);
        out.line("next: check the restored sessions:");
        out.line(next);
        return s.failed.length === 0 ? 0 : 1;
      }),
    );
}

function recoverArgs(flags: RecoverFlags, cli: Cli): { source: string; output: string | undefined } {
  const example = () => {
    let state = "/path/to/state.db";
    let profile = "default";
    try {
      const paths = cli.profile();
      state = paths.state;
      profile = paths.name;
    } catch {
      // The example keeps a placeholder path when the profile cannot be resolved.
    }
    return `for example: ${tenaxCommand(profile, ["sessions", "recover", "--source", flags.source ? resolve(flags.source) : state, "--inspect-only"])}`;
  };
  if (flags.source === undefined) {
    throw new UsageError("recover needs --source, the damaged state.db", { hint: example() });
  }
  if ((flags.inspectOnly === true) === (flags.output !== undefined)) {
    throw new UsageError("recover needs exactly one of --inspect-only and --output NEW.db", {
      hint: example(),
    });
  }
  return {
    source: resolve(flags.source),
    output: flags.output === undefined ? undefined : resolve(flags.output),
  };
}

/** A restore command that works as printed: the newest recovered file beside state.db, if any. */
function restoreExample(paths: ProfilePaths): string {
  const stem = basename(paths.state).replace(/\.db$/, "");
  let newest: string | null = null;
  try {
    const names = readdirSync(paths.dir).filter(
      (f) => f.startsWith(`${stem}.recovered-`) && f.endsWith(".db"),
    );
    newest = names.sort().pop() ?? null;
  } catch {
    // No profile folder yet: nothing was recovered here.
  }
  if (newest !== null) {
    return `for example: ${tenaxCommand(paths.name, ["sessions", "restore", "--from", join(paths.dir, newest)])}`;
  }
  return `recover the store first: ${tenaxCommand(paths.name, ["sessions", "recover", "--source", paths.state, "--inspect-only"])}`;
}

/** The selected profile names the store only when the store's own record of it is unreadable. */
function fallbackProfile(cli: Cli): string | undefined {
  try {
    return cli.profile().name;
  } catch {
    return undefined;
  }
}

interface Next {
  intro: string;
  command: string;
}

function nextCommand(report: RecoveryReport, flags: RecoverFlags): Next {
  const profile = report.profile.name;
  if (report.mode === "inspect") {
    const args = [
      "sessions",
      "recover",
      "--source",
      report.source,
      "--output",
      report.suggested_output ?? "",
    ];
    if (flags.spool) args.push("--spool", resolve(flags.spool));
    if (flags.forensics) args.push("--forensics", resolve(flags.forensics));
    return {
      intro: "next: write everything salvageable into a new store:",
      command: tenaxCommand(profile, args),
    };
  }
  return {
    intro:
      "next: stop every Tenax process of this profile first (gateway, chat, cron), then put the recovered store in place:",
    command: tenaxCommand(profile, ["sessions", "restore", "--from", report.output?.path ?? ""]),
  };
}

function printReport(out: Output, report: RecoveryReport, next: Next): void {
  const verb = report.mode === "inspect" ? "inspected" : "recovered";
  out.line(`${verb} ${report.source} (profile ${report.profile.name}, in ${report.duration_ms} ms)`);
  out.line(`forensic copy: ${report.forensics.dir}`);
  out.line();
  const rows = TABLES.map((t) => {
    const r = report.tables[t];
    return [t, String(r.found), String(r.salvaged), `${r.lost}${r.lost_is_lower_bound ? " or more" : ""}`];
  });
  out.line(table(["TABLE", "FOUND", "SALVAGED", "LOST"], rows));
  out.line();
  const p = report.pages;
  out.line(
    `pages: ${p.total} total, ${p.unreadable} unreadable, ${p.missing} missing, ${p.free} free (freelist ${p.freelist})`,
  );
  if (report.wal.present)
    out.line(
      `wal: ${report.wal.frames} frames, ${report.wal.applied} applied, ${report.wal.stranded} past damage`,
    );
  const s = report.spool;
  out.line(
    `spool: ${s.files.length} file(s), ${s.records} record(s): ${s.messages_new} message(s) to add, ${s.duplicates} already present`,
  );
  for (const note of report.notes) out.line(`note: ${note}`);
  const o = report.output;
  if (o !== null) {
    out.line(
      `wrote ${o.path}: ${o.written.sessions} sessions (+${o.written.placeholder_sessions} placeholders for lost ones), ${o.written.messages} messages, ${o.written.turns} turns, ${o.written.records} records; spool replayed: ${o.spool.records} records, ${o.spool.messages} new messages; integrity ${o.integrity.status}`,
    );
  }
  out.line();
  const lost = TABLES.filter((t) => report.tables[t].lost > 0 || report.tables[t].lost_is_lower_bound);
  if (report.complete) out.line("nothing lost: everything found was salvaged");
  else if (lost.length > 0) {
    const parts = lost.map(
      (t) => `${report.tables[t].lost}${report.tables[t].lost_is_lower_bound ? " or more" : ""} ${t}`,
    );
    out.line(`LOST: ${parts.join(", ")} could not be salvaged; everything else was`);
  } else out.line("LOST: some rows could not be written into the new store (see the notes above)");
  out.line(next.intro);
  out.line(next.command);
}
