// The classifier: one pure function from a failed provider call (status, headers, body, transport error,
// request size) to a ClassifiedError. It reduces the failure to a few facts, then the first matching rule
// of classify-rules.ts names the reason; the reason's flags say what happens next.

import { redactKeyShapes } from "../core/redact.js";
import type { ClassifiedError, ErrorReason, ProviderFailure } from "./classified-error.js";
import { type Facts, REASON_FLAGS, RULES } from "./classify-rules.js";
import { explicitRetryAfter, rateLimitReset, spokenRetryAfter } from "./retry-after.js";
import { certificateMessage, localResourcesMessage, unreachableMessage } from "./unreachable.js";

/** The longest message we hand to people and logs. */
export const MESSAGE_MAX_CHARS = 300;
/** Text we read from a body: enough for any real error, bounded so a huge body costs nothing. */
const TEXT_MAX_CHARS = 8_000;
/** Text bodies longer than this are not parsed as JSON. */
const PARSE_MAX_CHARS = 256_000;

/**
 * Classify a failed provider call. Never throws. `now` (epoch ms, from the caller's clock) turns HTTP-date,
 * RFC 3339 and epoch resets into delays; without it those are ignored and only relative delays count.
 */
export function classify(failure: ProviderFailure, now?: number): ClassifiedError {
  const headers = lowerCaseHeaders(failure.headers);
  const body = safeReadBody(failure.body);
  const facts = toFacts(failure, body);
  const reason: ErrorReason = RULES.find((rule) => rule.test(facts))?.reason ?? "unknown";
  return {
    reason,
    ...REASON_FLAGS[reason],
    retry_after_ms: reason === "aborted" ? null : retryAfter(reason, headers, body, facts.text, now),
    status: typeof failure.status === "number" && Number.isFinite(failure.status) ? failure.status : null,
    message: humanMessage(failure, body, reason),
    ...(namesModel(facts.text, failure.model) ? { model_named: true } : {}),
  };
}

/**
 * Whether the error's text names the requested model as a whole word: `gpt-4o` in "for gpt-4o in
 * organization", not in "gpt-4o-mini"; `llama-3.3-70b-versatile` in backquotes (Groq).
 */
function namesModel(text: string, model: string | null | undefined): boolean {
  if (!model) return false;
  const name = model.toLowerCase().replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
  return new RegExp(`(?<![\\w./:-])${name}(?![\\w-]|[.:/][\\w])`).test(text);
}

/** What we could read from a body, whatever shape it came in. */
interface BodyReading {
  types: Set<string>;
  /** Human messages, outer first, then the upstream's (OpenRouter's metadata.raw). */
  messages: string[];
  /** The upstream provider's name, when a router said which one failed. */
  upstream: string | null;
  /** A status carried inside the body (`error.code: 429` in an OpenRouter stream event). */
  status: number | null;
  moderation: boolean;
  unparseable: boolean;
  /** Rate-limit headers a router relayed in its metadata. */
  headers: Record<string, string>;
}

function emptyReading(): BodyReading {
  return {
    types: new Set(),
    messages: [],
    upstream: null,
    status: null,
    moderation: false,
    unparseable: false,
    headers: {},
  };
}

function toFacts(failure: ProviderFailure, body: BodyReading): Facts {
  const httpStatus =
    typeof failure.status === "number" && Number.isFinite(failure.status) ? failure.status : null;
  // An error event inside a 200 stream carries its real status in the body; the rules use that one.
  const status =
    (httpStatus === null || httpStatus < 400) && body.status !== null && body.status >= 400
      ? body.status
      : httpStatus;
  const transport = failure.transport ?? null;
  const tokens = failure.request_tokens;
  const window = failure.context_window;
  return {
    status,
    phase: failure.phase ?? null,
    aborted: failure.aborted === true,
    transport:
      transport === null || typeof transport !== "object"
        ? null
        : { code: lower(transport.code), name: lower(transport.name) },
    types: body.types,
    text: body.messages.join("\n").toLowerCase().slice(0, TEXT_MAX_CHARS),
    moderation: body.moderation,
    unparseable: body.unparseable,
    overflowKnown: typeof tokens === "number" && typeof window === "number" && window > 0 && tokens > window,
  };
}

/** Reading a body never throws: a hostile or cyclic value yields an empty reading. */
function safeReadBody(raw: unknown): BodyReading {
  const reading = emptyReading();
  try {
    readBody(raw, reading, true);
  } catch {
    return emptyReading();
  }
  return reading;
}

function readBody(raw: unknown, into: BodyReading, outer: boolean): void {
  if (typeof raw === "string") {
    const parsed = parseJson(raw);
    if (parsed !== undefined) {
      readBody(parsed, into, outer);
      return;
    }
    const text = raw.trim().slice(0, TEXT_MAX_CHARS);
    if (text === "") return;
    into.messages.push(text);
    if (outer) into.unparseable = true;
    return;
  }
  if (!isRecord(raw)) return;
  // OpenAI, Anthropic, OpenRouter, llama.cpp: `{ error: {...} }`; Ollama: `{ error: "..." }`;
  // older vLLM: the error object at the top level.
  const error = isRecord(raw.error) ? raw.error : raw;
  if (typeof raw.error === "string") into.messages.push(clip(raw.error));
  addType(into, raw.type === "error" ? undefined : raw.type);
  for (const key of ["type", "code", "status"] as const) addType(into, error[key]);
  if (isRecord(error.details)) addType(into, error.details.error_code);
  const code = typeof error.code === "number" ? error.code : typeof raw.code === "number" ? raw.code : null;
  if (outer && code !== null && code >= 400 && code < 600) into.status = code;
  for (const value of [
    error.message,
    error.detail,
    raw.message === error.message ? undefined : raw.message,
  ]) {
    if (typeof value === "string" && value.trim() !== "") into.messages.push(clip(value));
  }
  if (!outer || !isRecord(error.metadata)) return;
  readRouterMetadata(error.metadata, into);
}

/** OpenRouter wraps the upstream's error: `metadata.raw` (JSON text or plain text), `provider_name`, `reasons`. */
function readRouterMetadata(metadata: Record<string, unknown>, into: BodyReading): void {
  if (typeof metadata.provider_name === "string") into.upstream = clip(metadata.provider_name, 60);
  if (Array.isArray(metadata.reasons)) {
    into.moderation = true;
    const reasons = metadata.reasons.filter((r): r is string => typeof r === "string").slice(0, 10);
    if (reasons.length > 0) into.messages.push(`flagged: ${reasons.join(", ")}`);
  }
  if (metadata.raw !== undefined) readBody(metadata.raw, into, false);
  if (isRecord(metadata.headers)) {
    for (const [name, value] of Object.entries(metadata.headers)) {
      if (typeof value === "string" || typeof value === "number")
        into.headers[name.toLowerCase()] = String(value);
    }
  }
}

function retryAfter(
  reason: ErrorReason,
  headers: Record<string, string>,
  body: BodyReading,
  text: string,
  now: number | undefined,
): number | null {
  // An explicit ask wins; then the provider's own words; window resets only mean "wait" for a rate limit,
  // since they ride on every response.
  const relayed = { ...body.headers, ...headers };
  const explicit = explicitRetryAfter(relayed, now);
  if (explicit !== null) return explicit;
  const spoken = spokenRetryAfter(text);
  if (spoken !== null) return spoken;
  return reason === "rate_limit" ? rateLimitReset(relayed, now) : null;
}

function humanMessage(failure: ProviderFailure, body: BodyReading, reason: ErrorReason): string {
  const [outer, ...inner] = body.messages;
  let text = outer ?? "";
  const upstream = inner.find((m) => m !== outer);
  if (upstream !== undefined) text = `${text} (${body.upstream ?? "upstream"}: ${upstream})`;
  const transport = failure.transport;
  // Nothing answered: the address and what to check say more than an errno.
  if (reason === "unreachable" && transport && typeof transport === "object")
    return shorten(redact(unreachableMessage(transport, failure.endpoint)));
  if (reason === "ssl_cert_verification" && transport && typeof transport === "object")
    return shorten(redact(certificateMessage(transport, failure.endpoint)));
  if (reason === "local_resources" && transport && typeof transport === "object")
    return shorten(redact(localResourcesMessage(transport, failure.endpoint)));
  if (text === "" && transport && typeof transport === "object") {
    const label = transport.code ?? transport.name;
    text = label ? `${label}: ${String(transport.message)}` : String(transport.message);
  }
  if (text === "" && typeof failure.status === "number") text = `HTTP ${failure.status}`;
  if (text === "") text = reason === "aborted" ? "aborted by caller" : reason;
  return shorten(redactKeyShapes(text));
}

/** Keys never reach a log: anything shaped like one is replaced (known values are redacted by name later, by the profile's Redactor). */
export const redact = redactKeyShapes;

function shorten(text: string): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length <= MESSAGE_MAX_CHARS ? oneLine : `${oneLine.slice(0, MESSAGE_MAX_CHARS - 1)}…`;
}

function lowerCaseHeaders(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isRecord(headers)) return out;
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === "string" || typeof value === "number") out[name.toLowerCase()] = String(value);
  }
  return out;
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed.length > PARSE_MAX_CHARS || !/^[{[]/.test(trimmed)) return undefined;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return undefined;
  }
}

function addType(into: BodyReading, value: unknown): void {
  if (typeof value === "string" && value !== "" && value.length <= 100) into.types.add(value.toLowerCase());
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function lower(value: unknown): string {
  return typeof value === "string" ? value.toLowerCase() : "";
}

function clip(text: string, max = TEXT_MAX_CHARS): string {
  return text.length <= max ? text : text.slice(0, max);
}
