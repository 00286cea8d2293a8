// `tenax store copy --to URL`: the profile's SQLite store (state.db, left unchanged) copied into an
// empty PostgreSQL database, every count read back, and the config change printed. The gateway
// must not run meanwhile (what it wrote during the copy would be missing from it).

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { storeSchema } from "../../config/store-schema.js";
import { UsageError } from "../../core/errors.js";
import { tenaxCommand } from "../../profile/command-hint.js";
import { readGatewayPid } from "../../profile/gateway-pid.js";
import type { ProfilePaths } from "../../profile/paths.js";
import { type CopyCounts, copyStore } from "../../store/copy.js";
import { recoverCommand } from "../../store/open-database.js";
import { urlWithoutPassword } from "../../store/postgres/pg-url.js";
import { postgresEngine } from "../../store/registry.js";
import { pendingSpool, type ReplayReport, replaySpool } from "../../store/spool-replay.js";
import type { Cli } from "../main.js";

interface CopyFlags {
  to: string;
  json?: boolean;
}

export function registerStoreCommands(program: Command, cli: Cli): void {
  const store = program.command("store").description("the profile's session store and its engine");
  store
    .command("copy")
    .description("copy this profile's SQLite store (state.db) into an empty PostgreSQL database")
    .requiredOption("--to <url>", "the database: postgresql://USER:PASSWORD@HOST:5432/DB")
    .option("--json", "print JSON")
    .action((flags: CopyFlags) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        const url = checkUrl(flags.to);
        refuseWhileGatewayRuns(paths);
        if (!existsSync(paths.state))
          throw new UsageError(`no SQLite store at ${paths.state}: this profile has nothing to copy yet`, {
            hint: "a profile's store is created the first time it stores a session",
          });
        const counts = await copyInto(paths, url, (line) => out.warn(line));
        const where = urlWithoutPassword(url);
        if (out.json) {
          out.document({ copied: counts, from: paths.state, to: where, config: CONFIG_CHANGE });
          return 0;
        }
        for (const line of summary(paths, counts, where)) out.line(line);
        return 0;
      }),
    );
  store
    .command("replay")
    .description("fold the writes an unreachable PostgreSQL refused (kept in the spool) into it")
    .option("--dry-run", "only say what would be replayed")
    .option("--json", "print JSON")
    .action((flags: ReplayFlags) =>
      cli.run(flags.json, async (out) => {
        const paths = cli.profile();
        const { config } = loadConfig(paths);
        if (config.store.engine !== "postgres" || config.store.url === undefined)
          throw new UsageError(
            "tenax store replay is for a store in PostgreSQL, and this profile's store is SQLite's",
            {
              hint: `on SQLite the spool is folded in by salvage: ${recoverCommand(paths.state, paths.name)}`,
            },
          );
        const url = config.store.url;
        const where = urlWithoutPassword(url);
        if (flags.dryRun) {
          const pending = pendingSpool(paths.spool, paths.name, where);
          const ops = pending.records.reduce((n, r) => n + r.record.ops.length, 0);
          if (out.json) {
            out.document({
              dry_run: true,
              records: pending.records.length,
              ops,
              foreign: pending.foreign,
              unreadable: pending.unreadable,
            });
            return 0;
          }
          out.line(
            `${pending.records.length} spooled writes (${ops} operations) in ${paths.spool} wait to be replayed into ${where}${leftAlone(pending.foreign, pending.unreadable.length)}`,
          );
          return 0;
        }
        const report = await replayInto(paths, url);
        if (out.json) {
          out.document({ ...report, into: where });
          return report.unreadable.length > 0 ? 1 : 0;
        }
        out.line(
          `replayed ${report.records} spooled writes (${report.ops} operations) into ${where}: ${report.messages} messages stored, ${report.duplicates} already there${report.superseded > 0 ? `, ${report.superseded} operations of turns that ended meanwhile left out` : ""}${report.fenced > 0 ? `, ${report.fenced} operations of turns another process took over refused by their lease epoch` : ""}${report.settled.length > 0 ? `; ${report.settled.length} turns their clients were refused settled as failed (${report.settled.join(", ")})` : ""}${leftAlone(report.foreign, report.unreadable.length)}`,
        );
        for (const u of report.unreadable) out.warn(`not a spool record: ${u.file} at byte ${u.offset}`);
        return report.unreadable.length > 0 ? 1 : 0;
      }),
    );
}

interface ReplayFlags {
  dryRun?: boolean;
  json?: boolean;
}

function leftAlone(foreign: number, unreadable: number): string {
  const parts = [
    ...(foreign > 0 ? [`${foreign} of another store or profile`] : []),
    ...(unreadable > 0 ? [`${unreadable} unreadable lines`] : []),
  ];
  return parts.length === 0 ? "" : `; left alone: ${parts.join(", ")}`;
}

/**
 * The replay, through a store with a spool of its own: a write the database refuses again stays
 * where it is in the profile's spool (its offset is not passed), rather than being spooled twice.
 */
async function replayInto(paths: ProfilePaths, url: string): Promise<ReplayReport> {
  const spoolDir = mkdtempSync(join(tmpdir(), "tenax-replay-spool-"));
  const { openPostgresStore } = await postgresEngine();
  const target = await openPostgresStore({ url, profile: paths.name, spoolDir });
  try {
    return await replaySpool(target, paths.spool, paths.name, () => Date.now());
  } finally {
    await target.shutdown();
    rmSync(spoolDir, { recursive: true, force: true });
  }
}

function checkUrl(url: string): string {
  const parsed = storeSchema.safeParse({ engine: "postgres", url });
  if (parsed.success) return url;
  throw new UsageError(`--to: ${parsed.error.issues[0]?.message ?? "expected a postgresql:// URL"}`, {
    hint: "e.g. tenax store copy --to postgresql://tenax:PASSWORD@db.example:5432/tenax",
  });
}

function refuseWhileGatewayRuns(paths: ProfilePaths): void {
  const gateway = readGatewayPid(paths.pid);
  if (gateway.running)
    throw new UsageError(
      `the gateway of profile '${paths.name}' runs (pid ${gateway.pid}): what it writes during the copy would be missing from it`,
      { hint: `stop it first (${tenaxCommand(paths.name, ["gateway", "stop"])}), then copy again` },
    );
}

/**
 * The copy, with a spool of its own: a write the database refuses midway belongs to no store yet,
 * so it must not land in the profile's spool (whose replay goes into the profile's store).
 */
async function copyInto(
  paths: ProfilePaths,
  url: string,
  progress: (line: string) => void,
): Promise<CopyCounts> {
  const spoolDir = mkdtempSync(join(tmpdir(), "tenax-copy-spool-"));
  const { openPostgresStore } = await postgresEngine();
  const target = await openPostgresStore({ url, profile: paths.name, spoolDir });
  try {
    return await copyStore({ path: paths.state, profile: paths.name }, target, (p) =>
      progress(`copying ${p.table}: ${p.done} of ${p.total}`),
    );
  } finally {
    await target.shutdown();
    rmSync(spoolDir, { recursive: true, force: true });
  }
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: the config value as the user writes it
const CONFIG_CHANGE = { store: { engine: "postgres", url: "${TENAX_DATABASE_URL}" } };

function summary(paths: ProfilePaths, counts: CopyCounts, where: string): string[] {
  const n = (count: number, what: string) => `${count} ${what}${count === 1 ? "" : "s"}`;
  return [
    `copied ${n(counts.sessions, "session")}, ${n(counts.messages, "message")}, ${n(counts.turns, "turn")}, ${n(counts.records, "record")} and ${n(counts.responses, "stored response")} into ${where}; every count read back matches`,
    `${paths.state} is unchanged. To run this profile on PostgreSQL:`,
    `  1. put the URL in ${paths.env}: TENAX_DATABASE_URL=postgresql://...`,
    `  2. set in ${paths.config}:`,
    "       store:",
    "         engine: postgres",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the config value as the user writes it
    '         url: "${TENAX_DATABASE_URL}"',
    `  3. restart the gateway: ${tenaxCommand(paths.name, ["gateway", "restart"])}`,
  ];
}
