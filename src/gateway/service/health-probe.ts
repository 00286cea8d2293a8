// One look at a gateway's `GET /health/live`: does the process serve HTTP right now?
import { errorMessage } from "../../core/errors.js";

export interface LiveProbe {
  ok: boolean;
  detail: string;
}

export interface ProbeTarget {
  host: string;
  port: number;
  apiKey?: string | undefined;
}

export type ProbeLive = (target: ProbeTarget, timeoutMs: number) => Promise<LiveProbe>;

export function liveUrl(target: ProbeTarget): string {
  const host = target.host.includes(":") ? `[${target.host}]` : target.host;
  // A gateway bound to every interface still answers on loopback.
  const dial = host === "0.0.0.0" ? "127.0.0.1" : host === "[::]" ? "[::1]" : host;
  return `http://${dial}:${target.port}/health/live`;
}

export const probeLive: ProbeLive = async (target, timeoutMs) => {
  const url = liveUrl(target);
  try {
    // /health/live needs no key, but sending it costs nothing and suits a stricter proxy.
    const headers: Record<string, string> = target.apiKey ? { authorization: `Bearer ${target.apiKey}` } : {};
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const body = await response.text();
    if (response.status !== 200) return { ok: false, detail: `${url} answered ${response.status}` };
    let status: unknown;
    try {
      status = (JSON.parse(body) as { status?: unknown }).status;
    } catch {
      return { ok: false, detail: `${url} answered 200 without JSON` };
    }
    if (status !== "ok") return { ok: false, detail: `${url} answered status ${JSON.stringify(status)}` };
    return { ok: true, detail: `${url} answered ok` };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { ok: false, detail: `${url} did not answer (${cause ?? errorMessage(error)})` };
  }
};
