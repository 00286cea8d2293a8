// One attempt at sending one outbox entry, classified once: delivered, retry (with the wait the
// receiver asked for, if any) or give up. Never throws.
import { mkdir, open, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { errorMessage } from "../core/errors.js";
import { originOf, retryAfterMs } from "../http/outbound.js";
import type { SendOutcome as ChannelOutcome } from "../outbox/channel.js";
import { writeFileAtomic } from "../profile/atomic-write.js";
import { NAME_PATTERN } from "./jobs.js";

/** What a cron entry of the outbox carries: which run, what of it, where to, and the body. */
export const cronPayload = z.object({
  run_key: z.string(),
  job: z.string(),
  /** What is sent: the run's result, or a notice that the job started failing or recovered. */
  what: z.enum(["result", "failing", "recovered"]),
  target: z.string(),
  /** The JSON body sent (for local: written to the file). */
  body: z.string(),
});
export type CronPayload = z.infer<typeof cronPayload>;

/** The delivery's own key, sent as the webhook's Idempotency-Key and marking notices.log lines. */
export const deliveryKey = (p: Pick<CronPayload, "run_key" | "what">): string => `${p.run_key}/${p.what}`;

export type SendOutcome = ChannelOutcome<CronPayload>;

export interface SendDeps {
  outputDir: string;
  fetchImpl: typeof fetch;
  timeoutMs: number;
  now: number;
  signal?: AbortSignal;
}

async function webhook(url: string, entry: CronPayload, deps: SendDeps): Promise<SendOutcome> {
  const origin = originOf(url);
  let response: Response;
  try {
    response = await deps.fetchImpl(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "idempotency-key": deliveryKey(entry),
        "user-agent": "tenax-cron",
      },
      body: entry.body,
      redirect: "manual",
      signal: AbortSignal.any([AbortSignal.timeout(deps.timeoutMs), ...(deps.signal ? [deps.signal] : [])]),
    });
  } catch (error) {
    const timedOut = error instanceof Error && error.name === "TimeoutError";
    const why = timedOut ? `no answer within ${deps.timeoutMs} ms` : errorMessage(error);
    return { kind: "retry", error: `webhook ${origin}: ${why}`, retryAfterMs: null };
  }
  // The body is not read; cancelling it frees the connection.
  await response.body?.cancel().catch(() => {});
  const status = response.status;
  const said = `webhook ${origin} answered ${status}${response.statusText ? ` ${response.statusText}` : ""}`;
  if (status >= 200 && status < 300) return { kind: "delivered", receipt: `webhook ${origin}` };
  if (status === 429 || status >= 500)
    return {
      kind: "retry",
      error: said,
      retryAfterMs: retryAfterMs(response.headers.get("retry-after"), deps.now),
    };
  if (status >= 300 && status < 400)
    return { kind: "give_up", error: `${said}; redirects are not followed: set deliver to the final URL` };
  return {
    kind: "give_up",
    error: `${said}; a client error will not go away by retrying: check the URL (tenax cron show NAME) and the receiver`,
  };
}

/** The file name of a result: the occurrence (without colons) and the run id. */
export function resultFile(occurrence: number, runId: string): string {
  return `${new Date(occurrence).toISOString().replaceAll(":", "-")}-${runId}.md`;
}

interface ResultBody {
  job: string;
  run_key: string;
  run_id: string;
  occurrence: string;
  state: string;
  missed: boolean;
  reply: string | null;
  error: string | null;
  started_at: string | null;
  ended_at: string | null;
}

function resultText(body: ResultBody): string {
  const lines = [
    `# ${body.job}: ${body.state}${body.missed ? " (missed, caught up)" : ""}`,
    "",
    `occurrence: ${body.occurrence}`,
    `run: ${body.run_id} (${body.run_key})`,
    `started: ${body.started_at ?? "-"}, ended: ${body.ended_at ?? "-"}`,
  ];
  if (body.error !== null) lines.push(`error: ${body.error}`);
  return `${lines.join("\n")}\n\n${body.reply ?? ""}\n`;
}

const TAIL_BYTES = 65_536;

/** Whether the log's tail already holds this entry: a crash between the append and its mark. */
async function logHas(file: string, key: string): Promise<boolean> {
  const size = await stat(file).then(
    (s) => s.size,
    () => 0,
  );
  if (size === 0) return false;
  if (size <= TAIL_BYTES) return (await readFile(file, "utf8")).includes(`[${key}]`);
  const handle = await open(file, "r");
  try {
    const buffer = Buffer.alloc(TAIL_BYTES);
    await handle.read(buffer, 0, TAIL_BYTES, size - TAIL_BYTES);
    return buffer.toString("utf8").includes(`[${key}]`);
  } finally {
    await handle.close();
  }
}

async function local(entry: CronPayload, deps: SendDeps): Promise<SendOutcome> {
  if (!NAME_PATTERN.test(entry.job))
    return { kind: "give_up", error: `"${entry.job}" is not a job name that can be a folder name` };
  const dir = join(deps.outputDir, entry.job);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const body = JSON.parse(entry.body) as Record<string, unknown>;
    if (entry.what === "result") {
      const result = body as unknown as ResultBody;
      const file = join(dir, resultFile(Date.parse(result.occurrence), result.run_id));
      await writeFileAtomic(file, resultText(result), 0o600);
      return { kind: "delivered", receipt: file };
    }
    const file = join(dir, "notices.log");
    if (await logHas(file, deliveryKey(entry))) return { kind: "delivered", receipt: file };
    const line = `${new Date(deps.now).toISOString()} [${deliveryKey(entry)}] ${String(body.text ?? "")}\n`;
    const handle = await open(file, "a", 0o600);
    try {
      await handle.appendFile(line, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { kind: "delivered", receipt: file };
  } catch (error) {
    return { kind: "retry", error: `writing under ${dir}: ${errorMessage(error)}`, retryAfterMs: null };
  }
}

export async function sendEntry(entry: CronPayload, deps: SendDeps): Promise<SendOutcome> {
  const target = entry.target;
  if (target === "local") return local(entry, deps);
  if (target.startsWith("webhook:")) return webhook(target.slice("webhook:".length), entry, deps);
  return {
    kind: "give_up",
    error: `delivery to ${target.split(":")[0]} is not supported by this Tenax; a job delivers to local or webhook:URL (tenax cron add NAME --deliver local)`,
  };
}
