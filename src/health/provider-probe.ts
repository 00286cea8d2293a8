// The background look at providers nobody has called lately: a TCP connect to the provider's host
// (`connect`, the default: no request, no key, nothing the provider counts), or `GET /models`
// (`models`: the OpenAI-compatible list, Anthropic's `/v1/models`, with the configured key; it
// proves the API answers and takes the key). Neither costs a token. Each look has a deadline; what it
// saw goes to the provider-health recorder, so /health, status and the dashboard see it.
import { connect } from "node:net";
import type { ProviderType, TenaxConfig } from "../config/schema.js";
import { classify } from "../llm/classify.js";
import { keyRequired, refusesTheKey } from "../llm/key-required.js";
import type { ProviderHealthRecorder } from "../llm/provider-health.js";
import type { ProviderObservation } from "../llm/provider-state.js";
import { DEFAULT_BASE_URLS } from "../llm/runtime.js";

export type ProviderProbeMode = "models" | "connect" | "off";

export interface ProbeSubject {
  provider: string;
  type: ProviderType;
  base_url: string;
  /** The key to send with `models`: null for a server that needs none. */
  keyed: boolean;
  key: () => Promise<string | null>;
}

/** Every configured provider a probe can reach: in-process simulators answer without one. */
export function probeSubjects(
  config: TenaxConfig,
  keyOf: (provider: string) => Promise<string | null>,
): ProbeSubject[] {
  return Object.entries(config.providers).flatMap(([provider, settings]) => {
    const base =
      settings.base_url ?? (settings.type === "simulator" ? undefined : DEFAULT_BASE_URLS[settings.type]);
    if (base === undefined) return [];
    const keyed = settings.api_keys !== undefined;
    return [{ provider, type: settings.type, base_url: base, keyed, key: () => keyOf(provider) }];
  });
}

/** Where `models` looks: OpenAI-compatible base URLs end in /v1; Anthropic's is the bare host. */
export function modelsUrl(type: ProviderType, baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, "");
  return type === "anthropic" ? `${base}/v1/models` : `${base}/models`;
}

/**
 * One look at one provider; never throws. A key that cannot be looked up (the ledger unreadable)
 * is the store's failure, not the provider's: the look is a connect, and its message says why.
 */
export async function probeProvider(
  subject: ProbeSubject,
  mode: "models" | "connect",
  signal: AbortSignal,
  now: () => number,
): Promise<ProviderObservation> {
  const started = now();
  try {
    let note: string | null = null;
    if (mode === "models") {
      let key: string | null = null;
      if (subject.keyed)
        try {
          key = await subject.key();
        } catch (error) {
          note = `its key could not be looked up (${error instanceof Error ? error.message : String(error)}), so a connect instead`;
        }
      // Every key cooling or disabled: the credentials layer says so; a connect still shows the host.
      if (note === null && (!subject.keyed || key !== null))
        return await probeModels(subject, key, signal, now, started);
    }
    const seen = await probeConnect(subject, signal, now, started);
    return note === null ? seen : { ...seen, message: `${note}: ${seen.message ?? ""}` };
  } catch (error) {
    // Nothing above is known to throw; should anything, the look failed, and says what threw.
    return {
      ok: false,
      at: now(),
      model: null,
      reason: "unknown",
      message: `the probe could not look at ${subject.base_url}: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

async function probeModels(
  subject: ProbeSubject,
  key: string | null,
  signal: AbortSignal,
  now: () => number,
  started: number,
): Promise<ProviderObservation> {
  const url = modelsUrl(subject.type, subject.base_url);
  const headers: Record<string, string> = { accept: "application/json" };
  if (subject.type === "anthropic") {
    headers["anthropic-version"] = "2023-06-01";
    if (key !== null) headers["x-api-key"] = key;
  } else if (key !== null) headers.authorization = `Bearer ${key}`;
  let response: Response;
  try {
    response = await fetch(url, { headers, signal, redirect: "manual" });
  } catch (error) {
    return transportFailure(error, signal, now, subject.base_url);
  }
  const took = now() - started;
  // A server without a model list (404, 405) still answered: it is up.
  if (response.ok || response.status === 404 || response.status === 405) {
    await response.body?.cancel().catch(() => undefined);
    return {
      ok: true,
      at: now(),
      model: null,
      reason: null,
      message: `GET ${url} answered ${response.status} in ${took} ms`,
      // No model list (404, 405) shows only that an HTTP server answers; a list, the API (and the key).
      scope: !response.ok ? "reach" : key !== null ? "key" : "api",
    };
  }
  let body: unknown = null;
  try {
    const text = await response.text();
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  } catch {
    // A body cut off: the status says enough.
  }
  const said = classify(
    { status: response.status, headers: Object.fromEntries(response.headers), body, phase: "headers" },
    now(),
  );
  // A server that needs no key, by config, refused the look: the same missing key a call would meet.
  const classified =
    !subject.keyed && refusesTheKey(said) ? keyRequired(said, subject.provider, subject.base_url) : said;
  return {
    ok: false,
    at: now(),
    model: null,
    reason: classified.reason,
    message: `GET ${url}: ${classified.message}`,
  };
}

function probeConnect(
  subject: ProbeSubject,
  signal: AbortSignal,
  now: () => number,
  started: number,
): Promise<ProviderObservation> {
  const url = new URL(subject.base_url);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (observation: ProviderObservation) => {
      signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(observation);
    };
    const onAbort = () => done(transportFailure(signal.reason, signal, now, subject.base_url));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () =>
      done({
        ok: true,
        at: now(),
        model: null,
        reason: null,
        message: `connected to ${host}:${port} in ${now() - started} ms`,
        scope: "reach",
      }),
    );
    socket.once("error", (error) => done(transportFailure(error, signal, now, subject.base_url)));
  });
}

/** A failure below HTTP, named by the same classifier a call's would be. */
function transportFailure(
  error: unknown,
  signal: AbortSignal,
  now: () => number,
  endpoint: string,
): ProviderObservation {
  const cause = (error instanceof Error && error.cause instanceof Error ? error.cause : error) as
    | (Error & { code?: string })
    | undefined;
  if (signal.aborted)
    return {
      ok: false,
      at: now(),
      model: null,
      reason: "timeout",
      message: signal.reason instanceof Error ? signal.reason.message : "the probe ran out of time",
    };
  const classified = classify(
    {
      status: null,
      headers: {},
      body: null,
      transport: {
        ...(cause?.code ? { code: cause.code } : {}),
        ...(cause?.name ? { name: cause.name } : {}),
        message: cause?.message ?? String(error),
      },
      phase: "connect",
      endpoint,
    },
    now(),
  );
  return { ok: false, at: now(), model: null, reason: classified.reason, message: classified.message };
}

export interface ProberOptions {
  subjects: readonly ProbeSubject[];
  recorder: ProviderHealthRecorder;
  mode: "models" | "connect";
  timeoutMs: number;
  /** A provider that ended a call more recently than this is not probed: the call said more. */
  intervalMs: number;
  now: () => number;
}

/** Probes the providers that are due, all at once, each under its deadline; one round at a time. */
export class ProviderProber {
  private running: Promise<void> | null = null;
  private readonly closing = new AbortController();

  constructor(private readonly options: ProberOptions) {}

  once(): Promise<void> {
    this.running ??= this.round().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  close(): void {
    this.closing.abort(new Error("the gateway is stopping"));
  }

  private async round(): Promise<void> {
    const { recorder, now, intervalMs } = this.options;
    const view = recorder.view();
    const due = this.options.subjects.filter((s) => {
      const call = view.get(s.provider)?.last_call;
      return call === null || call === undefined || now() - call.at >= intervalMs;
    });
    await Promise.all(
      due.map(async (subject) => {
        const deadline = AbortSignal.timeout(this.options.timeoutMs);
        const signal = AbortSignal.any([deadline, this.closing.signal]);
        const observation = await probeProvider(subject, this.options.mode, signal, now);
        if (this.closing.signal.aborted) return;
        if (deadline.aborted)
          observation.message = `no answer within ${Math.round(this.options.timeoutMs / 100) / 10} s`;
        recorder.observeProbe(subject.provider, observation);
      }),
    );
  }
}
