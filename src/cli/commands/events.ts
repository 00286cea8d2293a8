// `tenax events [--since 1h] [--layer L] [--session ID] [--type T] [--json] [--follow]`: the
// profile's audit trail (logs/events.jsonl, written by the gateway, `tenax chat` and cron), read
// from the files whether or not a gateway runs: every process writes its lines as its events
// happen, so the file is the one source. `--follow` prints new lines (across rotations) until
// Ctrl-C; with --json it prints them as JSON lines, since an array never ends.
import type { Command } from "commander";
import { readTrail, TrailTail } from "../../agent/audit-read.js";
import { type AuditRecord, auditFile } from "../../agent/audit-trail.js";
import {
  type EventsFlags,
  type EventsQuery,
  formatRecord,
  matches,
  parseEventsFlags,
} from "../events-query.js";
import type { Cli } from "../main.js";
import type { Output } from "../output.js";
import { writeStd } from "../std-streams.js";

const FOLLOW_POLL_MS = 250;

export function registerEventsCommand(program: Command, cli: Cli): void {
  program
    .command("events")
    .description(
      "the audit trail: every retry, key rotation, cooldown, fallback, compression, resume and store fault, oldest first",
    )
    .option("--since <when>", "only events since then: a duration back (30s, 15m, 1h, 2d) or an ISO time")
    .option(
      "--layer <layer>",
      "only this layer (retry, credentials, fallback, compression, store, ...; a,b for several)",
    )
    .option("--session <id>", "only this session (an id or the start of one)")
    .option("--type <type>", "only this type (retry, retry_exhausted, fallback, ...; a,b for several)")
    .option("--json", "print one JSON array (with --follow: one JSON object per line)")
    .option("--follow", "keep printing new events until Ctrl-C")
    .action((flags: EventsFlags) =>
      cli.run(flags.json, async (out) => {
        const query = parseEventsFlags(flags, Date.now());
        const file = auditFile(cli.profile());
        if (flags.follow) return follow(file, query, out);
        const trail = readTrail(file);
        const shown = trail.records.filter((r) => matches(r, query));
        if (trail.damaged > 0) out.warn(damagedLine(trail.damaged));
        if (out.json) {
          out.document(shown);
          return 0;
        }
        if (trail.files.length === 0) out.line(`no events recorded yet (${file} does not exist)`);
        else if (shown.length === 0) out.line(`no event matches (${trail.records.length} in ${file}*)`);
        for (const record of shown) out.line(formatRecord(record));
        return 0;
      }),
    );
}

function damagedLine(n: number): string {
  return `${n} damaged line(s) skipped (a process stopped or the disk filled mid-write)`;
}

/** Print what the trail holds, then each new line as it is written, until SIGINT or SIGTERM. */
async function follow(file: string, query: EventsQuery, out: Output): Promise<number> {
  // Listened for first: a Ctrl-C while the lines already written are printed ends it cleanly too.
  let stop = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = resolve;
  });
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  // The tail holds the current file before the rotated ones are listed, so a rotation meanwhile
  // neither hides lines nor shows them twice.
  const tail = new TrailTail(file);
  const print = (records: AuditRecord[]) => {
    for (const record of records)
      if (matches(record, query))
        writeStd("stdout", `${out.json ? JSON.stringify(record) : formatRecord(record)}\n`);
  };
  let damaged = 0;
  const poll = () => {
    print(tail.poll());
    if (tail.damaged > damaged) out.warn(damagedLine(tail.damaged - damaged));
    damaged = tail.damaged;
  };
  try {
    const old = readTrail(file, { rotatedOnly: true, skipIno: tail.ino });
    print(old.records);
    if (old.damaged > 0) out.warn(damagedLine(old.damaged));
    poll();
    if (!out.json) out.line(`following ${file} (Ctrl-C ends)`);
    const timer = setInterval(poll, FOLLOW_POLL_MS);
    await stopped;
    clearInterval(timer);
    poll();
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    tail.close();
  }
  return 0;
}
