// One attempt at sending one outbox entry, classified once: delivered, retry (with the wait the
// receiver asked for, if any) or give up. Never throws.
import { mkdir, open, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage } from "../core/errors.js";
import { originOf, retryAfterMs } from "../http/outbound.js";
import { writeFileAtomic } from "../profile/atomic-write.js";
import { NAME_PATTERN } from "./jobs.js";
import type { OutboxRecord } from "./records.js";

export type SendOutcome =
  | { kind: "delivered"; where: string }
  | { kind: "retry"; error: string; retryAfterMs: number | null }
  | { kind: "give_up"; error: string };

export interface SendDeps {
  outputDir: string;
  fetchImpl: typeof fetch;
  timeoutMs: number;
  now: number;
}

async function webhook(url: string, entry: OutboxRecord, deps: SendDeps): Promise<SendOutcome> {
  const origin = originOf(url);
  let response: Response;
  try {
    response = await deps.fetchImpl(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "idempotency-key": entry.key,
        "user-agent": "tenax-cron",
      },
      body: entry.body,
      redirect: "manual",
      signal: AbortSignal.timeout(deps.timeoutMs),
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
  if (status >= 200 && status < 300) return { kind: "delivered", where: `webhook ${origin}` };
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

async function local(entry: OutboxRecord, deps: SendDeps): Promise<SendOutcome> {
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
      return { kind: "delivered", where: file };
    }
    const file = join(dir, "notices.log");
    if (await logHas(file, entry.key)) return { kind: "delivered", where: file };
    const line = `${new Date(deps.now).toISOString()} [${entry.key}] ${String(body.text ?? "")}\n`;
    const handle = await open(file, "a", 0o600);
    try {
      await handle.appendFile(line, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    return { kind: "delivered", where: file };
  } catch (error) {
    return { kind: "retry", error: `writing under ${dir}: ${errorMessage(error)}`, retryAfterMs: null };
  }
}

export async function sendEntry(entry: OutboxRecord, deps: SendDeps): Promise<SendOutcome> {
  const target = entry.target;
  if (target === "local") return local(entry, deps);
  if (target.startsWith("webhook:")) return webhook(target.slice("webhook:".length), entry, deps);
  return {
    kind: "give_up",
    error: `delivery to ${target.split(":")[0]} is not supported by this Tenax; a job delivers to local or webhook:URL (tenax cron add NAME --deliver local)`,
  };
}
