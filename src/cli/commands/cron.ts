// `tenax cron add|list|show|runs|pause|resume|remove|run|tick`: the profile's scheduled jobs,
// kept in its store through the CronJobs service, so they work beside a running gateway (whose
// engine sees a change at its next wake-up). `run` and `tick` run the engine here (cron-run.ts, loaded
// only for them: the agent and provider stack it needs would slow every other cron command).

import type { Command } from "commander";
import { loadConfig } from "../../config/load.js";
import { modelProblem } from "../../config/model-check.js";
import { platformProblem } from "../../config/platform-check.js";
import { CronJobs, invalid, type JobInput, type JobView, profileTimezone } from "../../cron/jobs.js";
import { nextAfter } from "../../cron/next.js";
import type { RunRecord } from "../../cron/records.js";
import type { Cli } from "../main.js";
import { type Output, table } from "../output.js";
import { withWriter } from "../store-access.js";

interface AddFlags {
  schedule: string;
  prompt: string;
  model?: string;
  deliver?: string;
  timeout?: string;
  dir?: string;
  catchUp: boolean;
  disabled?: boolean;
  json?: boolean;
}

async function withJobs<T>(cli: Cli, out: Output, body: (jobs: CronJobs) => T | Promise<T>): Promise<T> {
  const paths = cli.profile({ create: true });
  const { config, warnings } = loadConfig(paths);
  for (const w of warnings) out.warn(w);
  return withWriter(paths, (store) =>
    body(
      new CronJobs(store, {
        timezone: profileTimezone(config),
        checkModel: (model) => modelProblem(config, model),
        checkPlatform: (platform) => platformProblem(config, platform),
      }),
    ),
  );
}

/** An instant in a time zone, with the zone's name: "2026-12-03 03:00 Europe/Berlin". */
export function zoned(ms: number | null, timezone: string): string {
  if (ms === null) return "-";
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone: timezone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
  }).formatToParts(new Date(ms));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  const seconds = part("second") === "00" ? "" : `:${part("second")}`;
  return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")}${seconds} ${timezone}`;
}

/** How far away an instant is, for people: "in 5 min", "3 h ago". */
export function relative(ms: number, now: number): string {
  const d = ms - now;
  const a = Math.abs(d);
  const amount =
    a < 60_000
      ? `${Math.round(a / 1000)} s`
      : a < 3_600_000
        ? `${Math.round(a / 60_000)} min`
        : a < 86_400_000
          ? `${(a / 3_600_000).toFixed(1).replace(/\.0$/, "")} h`
          : `${(a / 86_400_000).toFixed(1).replace(/\.0$/, "")} d`;
  return d >= 0 ? `in ${amount}` : `${amount} ago`;
}

/** A whole number given on the command line, or the usage error (exit 2) that names the option. */
function wholeNumber(option: string, text: string, example: string): number {
  if (!/^\d+$/.test(text.trim()))
    throw invalid(`${option} "${text}" is not a whole number`, `e.g. ${option} ${example}`);
  return Number(text);
}

function nextTimes(job: JobView, count: number): number[] {
  const times: number[] = [];
  let t = job.next_due_at;
  while (t !== null && times.length < count) {
    times.push(t);
    t = nextAfter(job.schedule, t);
  }
  return times;
}

function due(job: JobView, now: number): string {
  if (!job.enabled) return "paused";
  if (job.next_due_at === null) return "never (done)";
  return `${zoned(job.next_due_at, job.schedule.timezone)} (${relative(job.next_due_at, now)})`;
}

function lastResult(job: JobView): string {
  if (job.last === null) return "-";
  return job.last.error ? `${job.last.state}: ${firstLine(job.last.error, 40)}` : job.last.state;
}

function firstLine(text: string, max: number): string {
  const line = text.split("\n", 1)[0] ?? "";
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}

/** One run on one line: occurrence, state, missed, duration, and the error or the reply's first line. */
function runLine(run: RunRecord, timezone: string): string {
  const took =
    run.started_at !== null && run.ended_at !== null
      ? `${((run.ended_at - run.started_at) / 1000).toFixed(1)} s`
      : "-";
  const missed = run.missed ? " missed" : "";
  const count = run.count > 1 ? ` (x${run.count})` : "";
  const said = run.error ?? run.reason ?? (run.reply === null ? "" : firstLine(run.reply, 80));
  return `${zoned(run.occurrence, timezone)}  ${run.state}${missed}${count}  ${took}  ${run.trigger}${said ? `  ${said}` : ""}`;
}

function printJob(out: Output, job: JobView, now: number): void {
  const tz = job.schedule.timezone;
  out.line(`job ${job.name}: ${job.enabled ? "enabled" : "paused"}`);
  out.line(`schedule    ${job.schedule.spec} (${job.schedule.kind}, ${tz})`);
  out.line(`next due    ${due(job, now)}`);
  out.line(`prompt      ${job.prompt}`);
  out.line(`model       ${job.model ?? "the profile's primary model"}`);
  out.line(`deliver     ${job.deliver}`);
  out.line(`timeout     ${job.timeout_s === null ? "cron.default_timeout" : `${job.timeout_s} s`}`);
  out.line(`folder      ${job.dir ?? "where the gateway or tick runs"}`);
  out.line(
    `catch up    ${job.catch_up ? "yes (missed runs: one catch-up run)" : "no (missed runs are skipped)"}`,
  );
  out.line(`last        ${lastResult(job)}`);
  out.line(
    `streak      ${job.streak} failed in a row${job.failing_since === null ? "" : ` since ${zoned(job.failing_since, tz)}`}`,
  );
  out.line(`created     ${zoned(job.created_at, tz)}, updated ${zoned(job.updated_at, tz)}`);
}

export function registerCronCommands(program: Command, cli: Cli): void {
  const cron = program.command("cron").description("scheduled jobs: agent turns run on a schedule");

  cron
    .command("add <name>")
    .description("add a job that runs a prompt on a schedule")
    .requiredOption(
      "--schedule <spec>",
      'a 5-field cron expression ("0 3 * * *", "TZ=Europe/Berlin 0 3 * * *"), "every 30m", "in 10m" or an ISO time',
    )
    .requiredOption("--prompt <text>", "what the agent is asked at each run")
    .option("--model <provider/name>", "pin a configured model (default: the profile's primary)")
    .option("--deliver <target>", "where the reply goes: local, webhook:URL or telegram:CHAT_ID", "local")
    .option("--timeout <seconds>", "how long a run may take (default: cron.default_timeout)")
    .option("--dir <folder>", "the folder the run's tools start in")
    .option("--no-catch-up", "skip missed runs instead of one catch-up run after downtime")
    .option("--disabled", "add it paused (tenax cron resume NAME starts it)")
    .option("--json", "print JSON")
    .action((name: string, flags: AddFlags) =>
      cli.run(flags.json, (out) =>
        withJobs(cli, out, async (jobs) => {
          const input: JobInput = {
            schedule: flags.schedule,
            prompt: flags.prompt,
            model: flags.model ?? null,
            deliver: flags.deliver ?? "local",
            timeout_s: flags.timeout === undefined ? null : wholeNumber("--timeout", flags.timeout, "600"),
            dir: flags.dir ?? null,
            enabled: flags.disabled !== true,
            catch_up: flags.catchUp,
          };
          const job = await jobs.create(name, input);
          const next = nextTimes(job, 3);
          if (out.json) {
            out.document({ job, next_due: next });
            return 0;
          }
          out.line(`added job ${job.name} (${job.schedule.spec}, ${job.schedule.timezone})`);
          if (!job.enabled) out.line(`it is paused; start it with: tenax cron resume ${job.name}`);
          else if (next.length === 0) out.line("it has no time left to run");
          else {
            out.line("next due:");
            const now = Date.now();
            for (const t of next) out.line(`  ${zoned(t, job.schedule.timezone)} (${relative(t, now)})`);
          }
          return 0;
        }),
      ),
    );

  cron
    .command("list")
    .description("every job, with when it is next due and how its last run went")
    .option("--json", "print JSON")
    .action((flags: { json?: boolean }) =>
      cli.run(flags.json, (out) =>
        withJobs(cli, out, async (jobs) => {
          const list = await jobs.list();
          if (out.json) {
            out.document({ jobs: list });
            return 0;
          }
          if (list.length === 0) {
            out.line(
              'no cron jobs yet; add one with: tenax cron add NAME --schedule "every 1h" --prompt TEXT',
            );
            return 0;
          }
          const now = Date.now();
          out.line(
            table(
              ["NAME", "SCHEDULE", "NEXT DUE", "LAST", "STREAK", "ENABLED"],
              list.map((j) => [
                j.name,
                j.schedule.spec,
                due(j, now),
                lastResult(j),
                String(j.streak),
                j.enabled ? "yes" : "no",
              ]),
            ),
          );
          return 0;
        }),
      ),
    );

  cron
    .command("show <name>")
    .description("one job, every field, and its last 5 runs")
    .option("--json", "print JSON")
    .action((name: string, flags: { json?: boolean }) =>
      cli.run(flags.json, (out) =>
        withJobs(cli, out, async (jobs) => {
          const job = await jobs.get(name);
          const runs = await jobs.runs(name, 5);
          if (out.json) {
            out.document({ job, runs, next_due: nextTimes(job, 3) });
            return 0;
          }
          printJob(out, job, Date.now());
          out.line(runs.length === 0 ? "no runs yet" : "last runs:");
          for (const run of runs) out.line(`  ${runLine(run, job.schedule.timezone)}`);
          return 0;
        }),
      ),
    );

  cron
    .command("runs <name>")
    .description("a job's runs, newest first")
    .option("--limit <n>", "at most this many", "50")
    .option("--json", "print JSON")
    .action((name: string, flags: { json?: boolean; limit: string }) =>
      cli.run(flags.json, (out) =>
        withJobs(cli, out, async (jobs) => {
          const limit = wholeNumber("--limit", flags.limit, "20");
          if (limit < 1) throw invalid("--limit 0 shows nothing; give 1 or more", "e.g. --limit 20");
          const runs = await jobs.runs(name, limit);
          if (out.json) {
            out.document({ runs });
            return 0;
          }
          if (runs.length === 0) out.line(`job ${name} has not run yet`);
          const tz = (await jobs.get(name)).schedule.timezone;
          for (const run of runs) out.line(runLine(run, tz));
          return 0;
        }),
      ),
    );

  for (const [verb, what] of [
    ["pause", "stop running a job (what falls due meanwhile is recorded as skipped)"],
    ["resume", "run a paused job again, from now on"],
  ] as const) {
    cron
      .command(`${verb} <name>`)
      .description(what)
      .option("--json", "print JSON")
      .action((name: string, flags: { json?: boolean }) =>
        cli.run(flags.json, (out) =>
          withJobs(cli, out, async (jobs) => {
            const job = verb === "pause" ? await jobs.pause(name) : await jobs.resume(name);
            if (out.json) out.document({ job });
            else
              out.line(
                `job ${job.name} is ${job.enabled ? "enabled" : "paused"}; next due: ${due(job, Date.now())}`,
              );
            return 0;
          }),
        ),
      );
  }

  cron
    .command("remove <name>")
    .description("remove a job (its run records stay until they age out)")
    .option("--json", "print JSON")
    .action((name: string, flags: { json?: boolean }) =>
      cli.run(flags.json, (out) =>
        withJobs(cli, out, async (jobs) => {
          await jobs.remove(name);
          if (out.json) out.document({ removed: name });
          else out.line(`removed job ${name}`);
          return 0;
        }),
      ),
    );

  cron
    .command("run <name>")
    .description("run a job now, here, outside its schedule")
    .option("--json", "print JSON")
    .action((name: string, flags: { json?: boolean }) =>
      cli.run(flags.json, async (out) => (await import("./cron-run.js")).runJobCommand(cli, out, name)),
    );

  cron
    .command("tick")
    .description("run what is due once, here (for a system cron when no gateway runs)")
    .option("--json", "print JSON")
    .action((flags: { json?: boolean }) =>
      cli.run(flags.json, async (out) => (await import("./cron-run.js")).tickCommand(cli, out)),
    );
}
