// `tenax sessions ...`: list, show, search, export, delete, prune, stats, reindex, check, and the
// salvage commands. Read commands open the store read-only; a bad row is shown with a warning.

import { writeFileSync } from "node:fs";
import type { Command } from "commander";
import { stopSessionTurn } from "../../agent/turn-stop.js";
import { realSleep } from "../../core/deps.js";
import { UsageError } from "../../core/errors.js";
import { bystanderOwners } from "../../store/instances.js";
import type { StoreReads } from "../../store/port.js";
import type { MessageView } from "../../store/rows.js";
import { storedToolCalls } from "../../store/tool-calls.js";
import type { Cli } from "../main.js";
import { formatTime, type Output, table } from "../output.js";
import { withReader, withSqliteWriter, withWriter } from "../store-access.js";
import { describeLastTurn } from "../turn-state.js";
import { registerRecoverCommands } from "./sessions-recover.js";
import { describeStop } from "./sessions-stop.js";

interface JsonOpt {
  json?: boolean;
}

export function registerSessionsCommands(program: Command, cli: Cli): void {
  const sessions = program.command("sessions").description("list, read, search and repair stored sessions");

  sessions
    .command("list")
    .description("list sessions, most recently active first")
    .option("--limit <n>", "how many", parseCount, 50)
    .option("--offset <n>", "skip this many", parseCount, 0)
    .option("--json", "print JSON")
    .action((opts: JsonOpt & { limit: number; offset: number }) =>
      cli.run(opts.json, (out) =>
        withReader(cli.profile(), async (reader) => {
          const rows = (await reader?.listSessions({ limit: opts.limit, offset: opts.offset })) ?? [];
          warnRows(
            out,
            rows.map((s) => [`session ${s.id}`, s.warnings]),
          );
          if (out.json) {
            out.document({ sessions: rows });
            return 0;
          }
          if (rows.length === 0) {
            out.line("no sessions yet");
            return 0;
          }
          out.line(
            table(
              ["ID", "UPDATED", "MSGS", "SOURCE", "LAST TURN", "TITLE"],
              rows.map((s) => [
                s.warnings.length > 0 ? `${s.id} !` : s.id,
                formatTime(s.updated_at),
                String(s.message_count),
                s.source,
                describeLastTurn(s.last_turn),
                s.title,
              ]),
            ),
          );
          return 0;
        }),
      ),
    );

  sessions
    .command("show <id>")
    .description("print a session's transcript (an id or a unique prefix of one)")
    .option("--json", "print JSON")
    .action((id: string, opts: JsonOpt) =>
      cli.run(opts.json, (out) =>
        withReader(cli.profile(), async (reader) => {
          const { session, messages } = await readSession(reader, id);
          warnRows(out, [[`session ${session.id}`, session.warnings], ...messageWarnings(messages)]);
          if (out.json) {
            out.document({ session, messages });
            return 0;
          }
          out.line(`session ${session.id}  ${session.title}`);
          out.line(
            `created ${formatTime(session.created_at)}  updated ${formatTime(session.updated_at)}  source ${session.source}`,
          );
          for (const m of messages) out.line(`\n${renderMessage(m)}`);
          return 0;
        }),
      ),
    );

  sessions
    .command("search <query...>")
    .description("full-text search over every stored message")
    .option("--limit <n>", "how many hits", parseCount, 20)
    .option("--json", "print JSON")
    .action((words: string[], opts: JsonOpt & { limit: number }) =>
      cli.run(opts.json, (out) =>
        withReader(cli.profile(), async (reader) => {
          if (reader === null) throw new UsageError("there are no sessions to search yet");
          const result = await reader.search(words.join(" "), { limit: opts.limit });
          if (result.pending > 0)
            out.warn(`${result.pending} recent message(s) are not in the search index yet`);
          if (out.json) {
            out.document(result);
            return 0;
          }
          if (result.hits.length === 0) {
            out.line(`no messages match ${JSON.stringify(result.query)}`);
            return 0;
          }
          if (result.order === "recent") {
            out.line("(a word of this query is in very many messages: newest matches first, not ranked)");
          }
          for (const hit of result.hits) {
            out.line(
              `${hit.session_id} #${hit.message.seq} ${hit.message.role} ${formatTime(hit.message.created_at)}`,
            );
            out.line(`  ${hit.snippet}`);
          }
          return 0;
        }),
      ),
    );

  sessions
    .command("export <id>")
    .description("export a session with all its messages as JSON")
    .option("--output <file>", "write to this file instead of stdout")
    .option("--json", "print JSON (the default format)")
    .action((id: string, opts: JsonOpt & { output?: string }) =>
      cli.run(true, (out) =>
        withReader(cli.profile(), async (reader) => {
          const { session, messages } = await readSession(reader, id);
          warnRows(out, [[`session ${session.id}`, session.warnings], ...messageWarnings(messages)]);
          const document = {
            format: "tenax.session.v1",
            exported_at: new Date().toISOString(),
            session,
            messages,
          };
          if (opts.output === undefined) {
            out.document(document);
            return 0;
          }
          writeFileSync(opts.output, `${JSON.stringify(document, null, 2)}\n`);
          process.stderr.write(`exported ${messages.length} messages to ${opts.output}\n`);
          return 0;
        }),
      ),
    );

  sessions
    .command("stop <id>")
    .description("end the running (or stalled) turn of a session, whichever process runs it")
    .option("--wait <seconds>", "how long to wait for its process to end it", parseCount, 15)
    .option("--json", "print JSON")
    .action((id: string, opts: JsonOpt & { wait: number }) =>
      cli.run(opts.json, (out) =>
        withWriter(cli.profile(), async (store) => {
          const stopped = await stopSessionTurn(store, id, {
            by: `tenax sessions stop (pid ${process.pid})`,
            now: () => Date.now(),
            sleep: realSleep,
            waitMs: opts.wait * 1000,
            profile: cli.profile().name,
            owners: await bystanderOwners(store, Date.now()),
          });
          if (out.json) out.document(stopped);
          else out.line(describeStop(stopped));
          return stopped.outcome === "pending" ? 1 : 0;
        }),
      ),
    );

  sessions
    .command("delete <id>")
    .description("delete a session and its messages")
    .option("--json", "print JSON")
    .action((id: string, opts: JsonOpt) =>
      cli.run(opts.json, (out) =>
        withWriter(cli.profile({ create: true }), async (store) => {
          const full = await store.resolveSessionId(id);
          const messages = (await store.getMessages(full)).length;
          await store.deleteSession(full);
          if (out.json) {
            out.document({ deleted: full, messages });
            return 0;
          }
          out.line(`deleted session ${full} (${messages} messages)`);
          return 0;
        }),
      ),
    );

  sessions
    .command("prune")
    .description(
      "delete sessions idle for longer than --older-than days (sessions with a running turn are kept)",
    )
    .requiredOption("--older-than <days>", "idle for more than this many days", parseDays)
    .option("--dry-run", "only list what would be deleted")
    .option("--json", "print JSON")
    .action((opts: JsonOpt & { olderThan: number; dryRun?: boolean }) =>
      cli.run(opts.json, (out) =>
        withWriter(cli.profile({ create: true }), async (store) => {
          const cutoff = Date.now() - opts.olderThan * 86_400_000;
          const ids = await store.pruneSessions(cutoff, opts.dryRun === true);
          if (out.json) {
            out.document({ dry_run: opts.dryRun === true, sessions: ids });
            return 0;
          }
          out.line(
            `${opts.dryRun ? "would delete" : "deleted"} ${ids.length} session(s) idle since before ${formatTime(cutoff)}`,
          );
          for (const id of ids) out.line(`  ${id}`);
          return 0;
        }),
      ),
    );

  sessions
    .command("stats")
    .description("counts, sizes, bad rows and search index state of the store")
    .option("--json", "print JSON")
    .action((opts: JsonOpt) =>
      cli.run(opts.json, (out) =>
        withReader(cli.profile(), async (reader) => {
          if (reader === null) {
            if (out.json) {
              out.document({ path: cli.profile().state, exists: false });
              return 0;
            }
            out.line(`no store yet at ${cli.profile().state}`);
            return 0;
          }
          const stats = await reader.stats();
          if (stats.bad_rows.sessions + stats.bad_rows.messages > 0) {
            out.warn(
              `${stats.bad_rows.sessions} session row(s) and ${stats.bad_rows.messages} message row(s) have bad values; they are listed with warnings`,
            );
          }
          if (out.json) {
            out.document({ exists: true, ...stats });
            return 0;
          }
          out.line(`store      ${stats.path} (profile ${stats.profile}, schema ${stats.schema_version})`);
          out.line(`sessions   ${stats.sessions}`);
          out.line(`messages   ${stats.messages}`);
          out.line(
            `turns      ${
              Object.entries(stats.turns)
                .map(([k, v]) => `${k} ${v}`)
                .join(", ") || "none"
            }`,
          );
          // PostgreSQL's WAL is the server's own, and its search index is written with each message.
          const sqlite = reader.engine === "sqlite";
          out.line(
            `size       ${mib(stats.bytes.database)} database${sqlite ? `, ${mib(stats.bytes.wal)} WAL` : ""}`,
          );
          out.line(
            `search     ${sqlite ? `${stats.search_pending} message(s) waiting to be indexed` : "indexed as each message is written"}`,
          );
          out.line(`bad rows   ${stats.bad_rows.sessions} session(s), ${stats.bad_rows.messages} message(s)`);
          return 0;
        }),
      ),
    );

  sessions
    .command("reindex")
    .description("rebuild the full-text search index from the transcripts")
    .option("--json", "print JSON")
    .action((opts: JsonOpt) =>
      cli.run(opts.json, (out) =>
        withSqliteWriter(cli.profile({ create: true }), "tenax sessions reindex", async (store) => {
          const result = await store.index.rebuild("requested by tenax sessions reindex");
          if (out.json) {
            out.document({ rebuilt: true, ...result, path: store.index.index.path });
            return 0;
          }
          out.line(
            `rebuilt the search index ${store.index.index.path}: ${result.messages} messages in ${result.duration_ms} ms`,
          );
          return 0;
        }),
      ),
    );

  sessions
    .command("check")
    .description("check the store's pages for damage (quick by default, --full for every index)")
    .option("--full", "the slower, complete check")
    .option("--json", "print JSON")
    .action((opts: JsonOpt & { full?: boolean }) =>
      cli.run(opts.json, (out) =>
        withSqliteWriter(
          cli.profile({ create: true }),
          "tenax sessions check",
          async (store) => {
            const result = await store.checkIntegrity(opts.full ? "full" : "quick");
            const health = store.health();
            if (out.json) {
              out.document({ integrity: result, health });
              return result.status === "ok" ? 0 : 1;
            }
            out.line(
              `${result.mode} check of ${store.location.path}: ${result.status} (${result.duration_ms} ms)`,
            );
            if (result.status !== "ok") for (const line of result.detail) out.line(`  ${line}`);
            if (health.corrupt) out.line(`next: ${health.corrupt.recover}`);
            return result.status === "ok" ? 0 : 1;
          },
          { integrityCheckTimeoutMs: 0 },
        ),
      ),
    );

  registerRecoverCommands(sessions, cli);
}

async function readSession(
  reader: Pick<StoreReads, "getSession" | "resolveSessionId" | "getMessages"> | null,
  id: string,
) {
  if (reader === null) throw new UsageError(`no session '${id}': this profile has no sessions yet`);
  const full = await reader.resolveSessionId(id);
  const session = await reader.getSession(full);
  if (session === null) throw new UsageError(`no session '${id}'`);
  return { session, messages: await reader.getMessages(full) };
}

function messageWarnings(messages: MessageView[]): [string, string[]][] {
  return messages.map((m) => [`message #${m.seq} (id ${m.id})`, m.warnings]);
}

function warnRows(out: Output, rows: [string, string[]][]): void {
  for (const [what, warnings] of rows) for (const w of warnings) out.warn(`${what}: ${w}`);
}

function renderMessage(m: MessageView): string {
  const head = `[${m.seq}] ${m.role}${m.name ? ` (${m.name})` : ""}${m.tool_call_id ? ` for ${m.tool_call_id}` : ""}  ${formatTime(m.created_at)}`;
  const lines = [head];
  if (m.content !== null && m.content !== "") lines.push(m.content);
  for (const call of storedToolCalls(m.tool_calls)) lines.push(`→ ${call.name ?? "?"}(${call.arguments})`);
  return lines.join("\n");
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

function parseCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new UsageError(`expected a whole number, got ${JSON.stringify(value)}`);
  return n;
}

function parseDays(value: string): number {
  const n = Number(value.replace(/d$/, ""));
  if (!Number.isFinite(n) || n < 0)
    throw new UsageError(
      `--older-than takes a number of days (like 30 or 30d), got ${JSON.stringify(value)}`,
    );
  return n;
}
