// /api/jobs: the profile's cron jobs over HTTP, the same CronJobs service `tenax cron` uses.
// GET /api/jobs, POST /api/jobs (201), GET|PATCH|PUT|DELETE /api/jobs/NAME, POST
// /api/jobs/NAME/pause|resume|run, GET /api/jobs/NAME/runs?limit=N. A job's errors keep their
// message and hint: job_invalid is a 400, job_not_found a 404, job_exists a 409.
import { z } from "zod";
import { TenaxError } from "../../core/errors.js";
import type { CronJobs, JobInput } from "../../cron/jobs.js";
import { type App, jsonBodyOf } from "../../http/app.js";
import { badRequest, HttpError } from "../../http/http-error.js";
import { parseWith } from "../../http/validate.js";

export interface JobRoutesOptions {
  jobs: CronJobs;
  /** Run a job now, outside its schedule; left out, POST /api/jobs/NAME/run is a 503. */
  runNow?: (name: string) => Promise<unknown>;
}

const fields = {
  schedule: z.string({ error: 'expected a schedule as a string, e.g. "0 3 * * *" or "every 30m"' }),
  prompt: z.string({ error: "expected the prompt as a string" }),
  model: z.string({ error: "expected PROVIDER/NAME as a string, or null" }).nullable(),
  deliver: z.string({ error: "expected local, webhook:URL or telegram:CHAT_ID" }),
  timeout: z
    .number({ error: "expected whole seconds from 1 to 86400, or null" })
    .int({ error: "expected whole seconds from 1 to 86400, or null" })
    .nullable(),
  dir: z.string({ error: "expected a folder path as a string, or null" }).nullable(),
  enabled: z.boolean({ error: "expected true or false" }),
  catch_up: z.boolean({ error: "expected true or false" }),
};

const createBody = z.strictObject({
  name: z.string({ error: "expected the job's name as a string" }),
  schedule: fields.schedule,
  prompt: fields.prompt,
  model: fields.model.optional(),
  deliver: fields.deliver.optional(),
  timeout: fields.timeout.optional(),
  dir: fields.dir.optional(),
  enabled: fields.enabled.optional(),
  catch_up: fields.catch_up.optional(),
});

const patchBody = z.strictObject({
  schedule: fields.schedule.optional(),
  prompt: fields.prompt.optional(),
  model: fields.model.optional(),
  deliver: fields.deliver.optional(),
  timeout: fields.timeout.optional(),
  dir: fields.dir.optional(),
  enabled: fields.enabled.optional(),
  catch_up: fields.catch_up.optional(),
});

const nameParams = z.object({ name: z.string() });
const runsQuery = z.object({
  limit: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const value = raw === undefined ? 50 : Number(raw);
      if (Number.isSafeInteger(value) && value >= 1 && value <= 1000) return value;
      ctx.addIssue({
        code: "custom",
        message: `limit must be a whole number from 1 to 1000; got ${JSON.stringify(raw)}`,
        params: { code: "invalid_query" },
      });
      return z.NEVER;
    }),
});

type Fields = z.infer<typeof patchBody>;

/** The body's fields as CronJobs takes them (timeout is timeout_s there); absent ones stay absent. */
function inputOf(body: Fields): Partial<JobInput> {
  const input: Partial<JobInput> = {};
  if (body.schedule !== undefined) input.schedule = body.schedule;
  if (body.prompt !== undefined) input.prompt = body.prompt;
  if (body.model !== undefined) input.model = body.model;
  if (body.deliver !== undefined) input.deliver = body.deliver;
  if (body.timeout !== undefined) input.timeout_s = body.timeout;
  if (body.dir !== undefined) input.dir = body.dir;
  if (body.enabled !== undefined) input.enabled = body.enabled;
  if (body.catch_up !== undefined) input.catch_up = body.catch_up;
  return input;
}

/** A job's TenaxError as the HTTP error a client expects; anything else passes through. */
function httpErrorOf(error: unknown): unknown {
  if (!TenaxError.isInstance(error)) return error;
  const message = error.hint ? `${error.message}; ${error.hint}` : error.message;
  switch (error.code) {
    case "job_invalid":
      return badRequest("job_invalid", message);
    case "job_not_found":
      return new HttpError(404, "not_found_error", "job_not_found", message);
    case "job_exists":
      return new HttpError(409, "conflict_error", "job_exists", message);
    default:
      return error;
  }
}

async function mapped<T>(body: () => T | Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    throw httpErrorOf(error);
  }
}

const view = (job: object) => ({ object: "job", ...job });

export function registerJobRoutes(app: App, options: JobRoutesOptions): void {
  const { jobs } = options;
  const nameOf = (params: unknown) => parseWith(nameParams, params, "the path").name;

  app.get("/api/jobs", async () => ({ object: "list", data: (await jobs.list()).map(view) }));
  app.post("/api/jobs", { config: { jsonBody: true } }, async (request, reply) => {
    const { name, ...rest } = parseWith(createBody, jsonBodyOf(request), "the request body");
    const input = inputOf(rest) as JobInput;
    const created = await mapped(() => jobs.create(name, input));
    return reply
      .code(201)
      .header("location", `/api/jobs/${encodeURIComponent(name)}`)
      .send(view(created));
  });
  app.get("/api/jobs/:name", async (request) =>
    view(await mapped(async () => await jobs.get(nameOf(request.params)))),
  );
  const update = async (request: { params: unknown; body: unknown }, body: unknown) => {
    const name = nameOf(request.params);
    const patch = inputOf(parseWith(patchBody, body, "the request body"));
    return view(await mapped(() => jobs.update(name, patch)));
  };
  app.patch("/api/jobs/:name", { config: { jsonBody: true } }, (request) =>
    update(request, jsonBodyOf(request)),
  );
  app.put("/api/jobs/:name", { config: { jsonBody: true } }, (request) =>
    update(request, jsonBodyOf(request)),
  );
  app.delete("/api/jobs/:name", async (request) => {
    const name = nameOf(request.params);
    await mapped(() => jobs.remove(name));
    return { object: "job", name, deleted: true };
  });
  app.post("/api/jobs/:name/pause", async (request) =>
    view(await mapped(() => jobs.pause(nameOf(request.params)))),
  );
  app.post("/api/jobs/:name/resume", async (request) =>
    view(await mapped(() => jobs.resume(nameOf(request.params)))),
  );
  app.get("/api/jobs/:name/runs", async (request) => {
    const name = nameOf(request.params);
    const { limit } = parseWith(runsQuery, request.query, "the query");
    const runs = await mapped(async () => await jobs.runs(name, limit));
    return { object: "list", data: runs.map((run) => ({ object: "job_run", ...run })) };
  });
  app.post("/api/jobs/:name/run", async (request, reply) => {
    const name = nameOf(request.params);
    // Before anything runs: a job that is not there is a 404 whether or not runs can start here.
    await mapped(async () => await jobs.get(name));
    const runNow = options.runNow;
    if (runNow === undefined)
      throw new HttpError(
        503,
        "unavailable_error",
        "cron_unavailable",
        `this gateway cannot run jobs on demand; run it from the profile with: tenax cron run ${name}`,
      );
    const started = await mapped(() => runNow(name));
    return reply.code(202).send(started);
  });
}
