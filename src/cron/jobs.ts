// A profile's cron jobs as the CLI and /api/jobs see them: checked input (name, schedule, prompt,
// model, folder, timeout, delivery target) turned into stored definitions, and each job's view
// with its next due time, its last result and its failure streak. Errors say what is wrong and
// carry the code the CLI and HTTP map: job_invalid (exit 2, 400), job_not_found (404),
// job_exists (409).
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { TenaxError } from "../core/errors.js";
import type { WriteOp } from "../store/ops.js";
import type { StorePort } from "../store/port.js";
import { newRun, owedSince } from "./claim.js";
import { COUNT_CAP, span } from "./missed.js";
import { countBetween, latestAtOrBefore, nextAfter } from "./next.js";
import {
  HEALTH_KIND,
  type HealthRecord,
  JOB_KIND,
  type JobRecord,
  listJobs,
  listRuns,
  putOp,
  RUN_KIND,
  type RunRecord,
  readHealth,
  readJob,
  readSlot,
  SLOT_KIND,
  type SlotRecord,
} from "./records.js";
import { parseSchedule, ScheduleError } from "./schedule.js";

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const PROMPT_MAX = 100_000;

export interface JobInput {
  schedule: string;
  prompt: string;
  model?: string | null;
  deliver?: string;
  timeout_s?: number | null;
  dir?: string | null;
  enabled?: boolean;
  catch_up?: boolean;
}

export interface JobsOptions {
  /** The profile's time zone (cron.timezone, or the machine's). */
  timezone: string;
  now?: () => number;
  /** Why a pinned model cannot be used (not configured), or null when it can. */
  checkModel?: (model: string) => string | null;
  /** Why a chat platform cannot be delivered to (not configured), or null when it can. */
  checkPlatform?: (name: string) => string | null;
  /** Where a relative --dir is resolved from. */
  cwd?: string;
  /** Told after each change is stored (the gateway's engine looks again at once). */
  onChange?: (name: string) => void;
}

/** A job as listed: its definition and what the scheduler and its runs say of it. */
export interface JobView extends JobRecord {
  next_due_at: number | null;
  last: Pick<RunRecord, "run_key" | "state" | "occurrence" | "ended_at" | "error"> | null;
  streak: number;
  failing_since: number | null;
}

/** The profile's time zone: cron.timezone, or the machine's. */
export function profileTimezone(config: { cron: { timezone?: string | undefined } }): string {
  return config.cron.timezone ?? Intl.DateTimeFormat().resolvedOptions().timeZone;
}

export function invalid(message: string, hint?: string): TenaxError {
  return new TenaxError("job_invalid", message, { exitCode: 2, ...(hint ? { hint } : {}) });
}

export function notFound(name: string): TenaxError {
  return new TenaxError("job_not_found", `there is no cron job named "${name}"`, {
    hint: "tenax cron list shows the jobs",
  });
}

export function checkName(name: string): string {
  if (!NAME_PATTERN.test(name))
    throw invalid(
      `"${name}" is not a job name; use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`,
      'e.g. tenax cron add nightly-report --schedule "0 3 * * *" --prompt "..."',
    );
  return name;
}

/** `local`, `webhook:http(s)://...` or `telegram:CHAT_ID`; throws with what is wrong. */
export function checkTarget(target: string, checkPlatform?: (name: string) => string | null): string {
  const text = target.trim();
  if (text === "local") return text;
  if (text.startsWith("webhook:")) {
    const url = text.slice("webhook:".length);
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {
      parsed = null;
    }
    if (parsed === null || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
      throw invalid(
        `"${url}" in --deliver is not an http or https URL`,
        "e.g. --deliver webhook:https://example.com/hook",
      );
    return `webhook:${parsed.toString()}`;
  }
  if (text.startsWith("telegram:")) {
    if (!/^-?\d+$/.test(text.slice("telegram:".length)))
      throw invalid(
        `"${text}" names no Telegram chat; a chat id is a number`,
        "e.g. --deliver telegram:123456789",
      );
    const why = checkPlatform?.("telegram") ?? null;
    if (why !== null)
      throw invalid(
        `delivery to ${text}: ${why}`,
        "add platforms.telegram to config.yaml (docs/PLATFORMS.md: Connect a Telegram bot)",
      );
    return text;
  }
  throw invalid(`"${target}" is not a delivery target`, "use local, webhook:URL or telegram:CHAT_ID");
}

export class CronJobs {
  private readonly now: () => number;

  constructor(
    private readonly store: StorePort,
    private readonly options: JobsOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  async list(): Promise<JobView[]> {
    return Promise.all((await listJobs(this.store)).map((job) => this.view(job)));
  }

  async get(name: string): Promise<JobView> {
    const job = await readJob(this.store, name);
    if (!job) throw notFound(name);
    return await this.view(job);
  }

  /** A job's runs, newest first. */
  async runs(name: string, limit = 50): Promise<RunRecord[]> {
    if (!(await readJob(this.store, name))) throw notFound(name);
    return (await listRuns(this.store, name)).slice(0, limit);
  }

  async create(name: string, input: JobInput): Promise<JobView> {
    checkName(name);
    if (await readJob(this.store, name))
      throw new TenaxError("job_exists", `a cron job named "${name}" exists already`, {
        hint: `tenax cron remove ${name} first, or choose another name`,
      });
    const now = this.now();
    const job: JobRecord = {
      name,
      ...this.checked(input, now),
      created_at: now,
      updated_at: now,
    };
    // A job added again under an old name starts over: its old slot and streak go.
    await this.store.write([
      putOp(JOB_KIND, name, job, now),
      putOp(SLOT_KIND, name, null, now),
      putOp(HEALTH_KIND, name, null, now),
    ]);
    this.options.onChange?.(name);
    return await this.view(job);
  }

  /** Change some fields; a new schedule is owed from now on (not from the job's creation). */
  async update(name: string, patch: Partial<JobInput>): Promise<JobView> {
    const old = await readJob(this.store, name);
    if (!old) throw notFound(name);
    const now = this.now();
    const merged: JobInput = {
      schedule: patch.schedule ?? old.schedule.spec,
      prompt: patch.prompt ?? old.prompt,
      model: patch.model === undefined ? old.model : patch.model,
      deliver: patch.deliver ?? old.deliver,
      timeout_s: patch.timeout_s === undefined ? old.timeout_s : patch.timeout_s,
      dir: patch.dir === undefined ? old.dir : patch.dir,
      enabled: patch.enabled ?? old.enabled,
      catch_up: patch.catch_up ?? old.catch_up,
    };
    const checked = this.checked(merged, now);
    const rescheduled = patch.schedule !== undefined && patch.schedule !== old.schedule.spec;
    const job: JobRecord = {
      ...old,
      ...checked,
      schedule: rescheduled ? checked.schedule : old.schedule,
      updated_at: now,
    };
    const ops: WriteOp[] = [putOp(JOB_KIND, name, job, now)];
    const slot = await readSlot(this.store, name);
    const resumed = !old.enabled && job.enabled;
    if (rescheduled || resumed) {
      // Occurrences of the old schedule are not owed by the new one, nor those of a pause: they
      // are recorded as skipped, with the reason, and the slot starts from now.
      if (resumed && !rescheduled) {
        const paused = pausedRecord(old, owedSince(old, slot), now);
        if (paused) ops.push(putOp(RUN_KIND, paused.run_key, paused, now));
      }
      const value: SlotRecord = { name, slot: now, job_created_at: job.created_at, updated_at: now };
      ops.push(putOp(SLOT_KIND, name, value, now));
    }
    await this.store.write(ops);
    this.options.onChange?.(name);
    return await this.view(job);
  }

  /** Paused: nothing runs; what falls due meanwhile is recorded as skipped on resume (or caught up). */
  pause(name: string): Promise<JobView> {
    return this.update(name, { enabled: false });
  }

  resume(name: string): Promise<JobView> {
    return this.update(name, { enabled: true });
  }

  /** Remove the job, its slot and its streak; its run records stay until they age out. */
  async remove(name: string): Promise<void> {
    if (!(await readJob(this.store, name))) throw notFound(name);
    const now = this.now();
    await this.store.write([
      putOp(JOB_KIND, name, null, now),
      putOp(SLOT_KIND, name, null, now),
      putOp(HEALTH_KIND, name, null, now),
    ]);
    this.options.onChange?.(name);
  }

  private checked(input: JobInput, now: number): Omit<JobRecord, "name" | "created_at" | "updated_at"> {
    let schedule: JobRecord["schedule"];
    try {
      schedule = parseSchedule(input.schedule, { timezone: this.options.timezone, now });
    } catch (error) {
      if (error instanceof ScheduleError) throw invalid(error.message, error.hint);
      throw error;
    }
    if (schedule.kind === "once" && schedule.past)
      throw invalid(
        `"${input.schedule}" is in the past (${new Date(schedule.at).toISOString()}); a one-shot must be later than now`,
        'e.g. --schedule "in 10m"',
      );
    const prompt = input.prompt;
    if (typeof prompt !== "string" || prompt.trim() === "")
      throw invalid("the prompt is empty; say what the job should do");
    if (prompt.length > PROMPT_MAX)
      throw invalid(`the prompt is ${prompt.length} characters; at most ${PROMPT_MAX}`);
    const model = input.model ?? null;
    if (model !== null) {
      if (!/^[^/\s]+\/\S+$/.test(model))
        throw invalid(
          `"${model}" is not a model; pin one as PROVIDER/NAME`,
          "tenax status lists the configured models",
        );
      const why = this.options.checkModel?.(model) ?? null;
      if (why !== null) throw invalid(why, "tenax status lists the configured models");
    }
    const timeout = input.timeout_s ?? null;
    if (timeout !== null && (!Number.isInteger(timeout) || timeout <= 0 || timeout > 86_400))
      throw invalid(`a timeout of ${String(timeout)} s is not allowed; give whole seconds from 1 to 86400`);
    return {
      schedule,
      prompt,
      model,
      dir: input.dir == null ? null : this.checkDir(input.dir),
      timeout_s: timeout,
      deliver: checkTarget(input.deliver ?? "local", this.options.checkPlatform),
      enabled: input.enabled ?? true,
      catch_up: input.catch_up ?? true,
    };
  }

  private checkDir(dir: string): string {
    const full = isAbsolute(dir) ? dir : resolve(this.options.cwd ?? process.cwd(), dir);
    let isDir = false;
    try {
      isDir = statSync(full).isDirectory();
    } catch {
      isDir = false;
    }
    if (!isDir)
      throw invalid(
        `the working folder ${full} is not a folder that exists`,
        "create it, or give another --dir",
      );
    return full;
  }

  private async view(job: JobRecord): Promise<JobView> {
    const slot = await readSlot(this.store, job.name);
    const health: HealthRecord | null = await readHealth(this.store, job.name);
    const since = owedSince(job, slot);
    const last = (await listRuns(this.store, job.name)).find((r) => r.state !== "skipped") ?? null;
    return {
      ...job,
      next_due_at: job.enabled ? nextAfter(job.schedule, Math.max(since, this.now() - 1)) : null,
      last:
        last === null
          ? null
          : {
              run_key: last.run_key,
              state: last.state,
              occurrence: last.occurrence,
              ended_at: last.ended_at,
              error: last.error,
            },
      streak: health?.streak ?? 0,
      failing_since: health?.failing_since ?? null,
    };
  }
}

/** One skipped record standing for the occurrences that fell while the job was paused, or null. */
function pausedRecord(job: JobRecord, since: number, now: number): RunRecord | null {
  const count = countBetween(job.schedule, since, now, COUNT_CAP);
  const first = nextAfter(job.schedule, since);
  if (count === 0 || first === null || first > now) return null;
  const last = latestAtOrBefore(job.schedule, now, 1, since)[0] ?? first;
  const many = count >= COUNT_CAP && job.schedule.kind === "cron" ? `${count} or more` : String(count);
  return newRun(
    job,
    {
      occurrence: first,
      trigger: "schedule",
      state: "skipped",
      count,
      until: last,
      ended_at: now,
      reason: `${many} occurrence(s) fell while the job was paused (${span(now - first)})`,
    },
    null,
    now,
  );
}
