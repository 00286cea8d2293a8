// The classifier's knowledge as data: what each reason means for the caller (its flags), and the ordered
// rules that pick a reason from the facts of a failure. First match wins; each rule says why it exists.

import type { ClassifiedError, ErrorReason } from "./classified-error.js";
import {
  CERTIFICATE_CODES,
  MODEL_INCOMPATIBLE,
  REASONING_MANDATORY,
  SERVER_STARTED_WITHOUT,
} from "./classify-capabilities.js";

export type Flags = Pick<ClassifiedError, "retryable" | "rotate_credential" | "fallback" | "compress">;

const flags = (
  retryable: boolean,
  rotate_credential: boolean,
  fallback: boolean,
  compress: boolean,
): Flags => ({
  retryable,
  rotate_credential,
  fallback,
  compress,
});

/**
 * What happens next, per reason. `fallback` means "after the pool and the retries are spent" for retryable
 * reasons and "at once" for the others; `retryable` is about the same request on the same key.
 */
export const REASON_FLAGS: Readonly<Record<ErrorReason, Flags>> = {
  rate_limit: flags(true, true, true, false), // another key has its own budget; wait on the last one
  overloaded: flags(true, false, true, false), // the provider is busy for everyone: a key swap cannot help
  server_error: flags(true, false, true, false),
  timeout: flags(true, false, true, false),
  stream_drop: flags(true, false, true, false), // a provider that keeps dropping streams is worth leaving
  unreachable: flags(true, false, true, false), // down or restarting: a later try or another provider may answer
  // The host's certificate does not verify: a second handshake meets the same certificate and a key
  // plays no part in it, so neither helps; another provider is another host with its own certificate.
  ssl_cert_verification: flags(false, false, true, false),
  // Our own process is out of descriptors or socket memory: the provider was never reached and is not
  // at fault, and another provider would meet the same limit; a later try, once connections close, may pass.
  local_resources: flags(true, false, false, false),
  context_overflow: flags(false, false, false, true), // the same request fails again; a smaller one may not
  payload_too_large: flags(false, false, false, true),
  long_context_tier: flags(false, false, true, false), // this account lacks the tier; another model may not need it
  auth: flags(false, true, true, false), // next key; if every key is bad, another provider has its own pool
  auth_permanent: flags(false, true, true, false),
  // Never a rule's: the key pool names it, when a server called without a key refuses the call.
  // No key to rotate, and the same call is refused again; another provider may need none.
  key_required: flags(false, false, true, false),
  billing: flags(false, true, true, false),
  model_not_found: flags(false, false, true, false),
  // This model lacks a feature the request needs (tools, images, JSON mode): the same request fails
  // again, on every key; another model of the chain may have the feature.
  model_incompatible: flags(false, false, true, false),
  // The request turned reasoning off on a model that always reasons: the same request fails again on
  // any key. The router first sends it once more with reasoning left on (request-fixes.ts); when the
  // request had not turned it off, or that fails too, another model may take it as it is.
  reasoning_mandatory: flags(false, false, true, false),
  content_policy_blocked: flags(false, false, true, false),
  invalid_request: flags(false, false, false, false), // our bug: the same request fails everywhere
  format_error: flags(true, false, true, false), // a garbled body is usually a one-off; a second try is cheap
  // The same request fails again on any key or wait: the router sends it once more without the thinking
  // blocks it replayed (request-fixes.ts), and gives up if that fails too. Another model would be sent
  // the same blocks, so the chain is no help.
  thinking_signature: flags(false, false, false, false),
  aborted: flags(false, false, false, false), // ours: never retried, never an error to recover from
  // Ours too: no attempt or model can make what the client was sent true after the fact.
  reply_diverged: flags(false, false, false, false),
  // Ours: the model's breaker is open. Nothing was sent; another model may answer at once.
  circuit_open: flags(false, false, true, false),
  // A failure we cannot name: one bounded retry (the policy caps it), then another model.
  unknown: flags(true, false, true, false),
};

/**
 * Whether a failure says the model itself is unwell, so that it counts toward opening its circuit
 * breaker (breaker.ts): the provider failing to answer (5xx, overload, timeouts, nothing reachable,
 * streams cut). Never a request the model refused (a 400, a context overflow, a content refusal),
 * a key's trouble (auth, billing, rate limits: the key pool's business), nor anything of ours.
 */
export const MODEL_UNWELL: Readonly<Record<ErrorReason, boolean>> = {
  server_error: true,
  overloaded: true,
  timeout: true,
  unreachable: true,
  stream_drop: true, // a model that keeps cutting its streams is as unwell as one that fails them
  // A key's budget or standing, not the model's health: the pool cools or disables the key.
  rate_limit: false,
  auth: false,
  auth_permanent: false,
  key_required: false,
  billing: false,
  // The request's fault, or its size: the next, different request may pass.
  context_overflow: false,
  payload_too_large: false,
  long_context_tier: false,
  invalid_request: false,
  thinking_signature: false,
  content_policy_blocked: false,
  // Configuration, not health: no wait makes a missing model appear, a certificate verify, or a
  // model gain the feature (tools, images, reasoning off) this request needs.
  model_not_found: false,
  ssl_cert_verification: false,
  model_incompatible: false,
  reasoning_mandatory: false,
  // A garbled body is usually a one-off; a failure nobody can name proves nothing either way.
  format_error: false,
  unknown: false,
  // Ours.
  local_resources: false,
  aborted: false,
  reply_diverged: false,
  circuit_open: false,
};

/** What the rules look at: the failure reduced to a few normalised facts. */
export interface Facts {
  /** HTTP status, or the status an error event carried inside a 200 stream (OpenRouter's `error.code`). */
  status: number | null;
  phase: "connect" | "headers" | "stream" | null;
  aborted: boolean;
  /** Lower-cased transport code and name, when the failure was below HTTP. */
  transport: { code: string; name: string } | null;
  /** Lower-cased machine identifiers: error.type, error.code, error.status, details, upstream's too. */
  types: ReadonlySet<string>;
  /** Lower-cased human text: messages, the upstream's raw error, moderation reasons. */
  text: string;
  /** OpenRouter moderation metadata (`reasons`) was present. */
  moderation: boolean;
  /** The body was text that is not JSON (an HTML page, a truncated object). */
  unparseable: boolean;
  /** The request was known to be larger than the model's window. */
  overflowKnown: boolean;
}

export interface Rule {
  reason: ErrorReason;
  why: string;
  test: (f: Facts) => boolean;
}

const anyType = (f: Facts, ...names: string[]): boolean => names.some((n) => f.types.has(n));
const says = (f: Facts, ...patterns: RegExp[]): boolean => patterns.some((p) => p.test(f.text));
/** Not a 5xx: wording from a client-error or in-stream error event. */
const clientish = (f: Facts): boolean => f.status === null || f.status < 500;
const between = (f: Facts, low: number, high: number): boolean =>
  f.status !== null && f.status >= low && f.status <= high;

const TIMEOUT_CODES = new Set([
  "etimedout",
  "esockettimedout",
  "und_err_connect_timeout",
  "und_err_headers_timeout",
  "und_err_body_timeout",
]);
const isTimeout = (t: NonNullable<Facts["transport"]>): boolean =>
  t.name === "timeouterror" || TIMEOUT_CODES.has(t.code);

/**
 * The local system refused a socket: this process's open-file limit (EMFILE), the machine's file
 * table (ENFILE), or kernel memory for sockets (ENOBUFS, ENOMEM). Nothing left this machine.
 */
export const LOCAL_RESOURCE_CODES: ReadonlySet<string> = new Set(["emfile", "enfile", "enobufs", "enomem"]);

const LONG_CONTEXT_TIER = [
  /extra usage is required for (?:long|1m) context/,
  /long[- ]context (?:beta|tier|access)[^.]{0,60}(?:not (?:yet )?(?:available|enabled|supported)|required)/,
  /(?:not (?:yet )?(?:available|enabled)|not have access)[^.]{0,60}long[- ]context/,
];
const THINKING_SIGNATURE = [
  /signature[^.]{0,40}thinking/,
  /thinking[^.]{0,60}signature/,
  /thinking[^.]{0,80}blocks?[^.]{0,80}cannot be modified/,
];
const TPM_SMALLER_THAN_REQUEST = [/request too large[^.]{0,120}tokens per min/];
const BILLING_TYPES = [
  "insufficient_quota",
  "billing_error",
  "billing_not_active",
  "billing_hard_limit_reached",
  "enforced_spend_limit_reached",
  "insufficient_credits",
  "payment_required",
];
const BILLING_WORDS = [
  /insufficient[ _](?:quota|credits?|balance|funds)/,
  /exceeded your current quota/,
  /credit balance is too low/,
  /(?:out of|requires more|not enough) credits/,
  /spend(?:ing)? limits?\b/,
  /check your plan and billing/,
];
/** "Usage limit" is billing on a 400 (Anthropic) but too vague on a 429, where it may be a plain rate limit. */
const USAGE_LIMIT = /usage limits?\b/;
const POLICY_TYPES = ["content_filter", "content_policy_violation", "moderation_blocked", "content_policy"];
const POLICY_WORDS = [
  /\bflagged\b/,
  /content (?:management )?policy/,
  /\bmoderation\b/,
  /safety (?:system|filter)/,
  /\bguardrail/,
];
const OVERLOAD_WORDS = [
  /overload/,
  /over capacity|at capacity|insufficient capacity|capacity (?:constraints|issues)/,
  /server (?:is )?busy|high demand/,
  /loading model|model is (?:still )?loading/,
];
const UNKNOWN_PARAMETER = [
  /unknown (?:parameter|field|argument)/,
  /unsupported (?:parameter|field|argument)/,
  /unrecognized (?:request )?(?:parameter|field|argument)/,
  /extra (?:inputs|fields) (?:are )?not permitted/,
  /additional properties are not allowed/,
  /unexpected keyword argument/,
];
const OVERFLOW_TYPES = ["context_length_exceeded", "exceed_context_size_error", "string_above_max_length"];
const OVERFLOW_WORDS = [
  /context[_ ]length[_ ]exceeded/,
  /maximum context length/,
  /exceeds? (?:the )?(?:available |maximum |model'?s? )?context(?: size| length| window| limit)/,
  /exceed context limit/,
  /prompt is too long/,
  /too many (?:input |prompt )?tokens/,
  /reduce the length of the (?:messages|prompt|input)/,
  /input (?:length|tokens?)[^.]{0,40}exceeds?[^.]{0,40}(?:context|maximum)/,
  /exceeds the maximum number of tokens/,
  /longer than the (?:model'?s? )?(?:context|maximum)/,
];
const MODEL_MISSING = [
  /model[^.]{0,80}(?:not found|does not exist|is not available)/,
  /no such model|unknown model|invalid model/,
  /try pulling it first/,
  /no endpoints found/,
];
const AUTH_WORDS = [
  /invalid (?:x-)?api[ _-]?key/,
  /incorrect api key/,
  /api key (?:is )?(?:invalid|missing|disabled|expired|revoked|not valid)/,
  /no auth credentials/,
  /\bunauthori[sz]ed\b/,
  /authentication (?:failed|required)/,
];
const RATE_WORDS = [/rate[ _-]?limit/, /too many requests/, /(?:requests|tokens) per (?:minute|min|day)/];

/** Ordered: a failure takes the reason of the first rule it meets. */
export const RULES: readonly Rule[] = [
  {
    reason: "aborted",
    why: "our own signal ended the call: an abort is never retried",
    test: (f) => f.aborted,
  },
  {
    reason: "local_resources",
    why: "EMFILE and its kin come from our own process or machine before any packet left: never the provider's fault",
    test: (f) => f.transport !== null && LOCAL_RESOURCE_CODES.has(f.transport.code),
  },
  {
    reason: "ssl_cert_verification",
    why: "the host's certificate does not verify (expired, untrusted CA, wrong name): every retry meets the same certificate; the fix is on this machine or that host",
    test: (f) => f.transport !== null && CERTIFICATE_CODES.has(f.transport.code),
  },
  {
    reason: "format_error",
    why: "a body we could not parse (a JSON error from the stream parser) is the provider's garbling",
    test: (f) => f.transport?.name === "syntaxerror",
  },
  {
    reason: "stream_drop",
    why: "a transport failure or idle timeout after the headers loses a stream already under way",
    test: (f) =>
      f.transport !== null &&
      (f.phase === "stream" || (f.status !== null && f.status >= 200 && f.status < 300)),
  },
  {
    reason: "timeout",
    why: "one of our timeouts (connect, first byte) fired before any answer",
    test: (f) => f.transport !== null && isTimeout(f.transport),
  },
  {
    reason: "unreachable",
    why: "refused, reset, DNS or TLS failure before headers: no answer came from the endpoint at all",
    test: (f) => f.transport !== null,
  },
  {
    reason: "long_context_tier",
    why: "the account lacks the long-context tier; it often arrives as a 429 that no wait will clear",
    test: (f) => says(f, ...LONG_CONTEXT_TIER),
  },
  {
    reason: "thinking_signature",
    why: "replayed thinking blocks were rejected; the caller must strip them, not wait",
    test: (f) => clientish(f) && says(f, ...THINKING_SIGNATURE),
  },
  {
    reason: "context_overflow",
    why: "a 429 saying one request exceeds the tokens-per-minute limit clears by shrinking, not by waiting",
    test: (f) => f.status === 429 && says(f, ...TPM_SMALLER_THAN_REQUEST),
  },
  {
    reason: "billing",
    why: "quota or credits are gone (OpenAI says insufficient_quota with a 429): waiting will not help",
    test: (f) =>
      f.status === 402 ||
      anyType(f, ...BILLING_TYPES) ||
      (clientish(f) && f.status !== 401 && says(f, ...BILLING_WORDS)) ||
      (clientish(f) && f.status !== 401 && f.status !== 429 && says(f, USAGE_LIMIT)),
  },
  {
    reason: "content_policy_blocked",
    why: "moderation refused the input; the same model will refuse again, another may not",
    test: (f) =>
      f.moderation ||
      anyType(f, ...POLICY_TYPES) ||
      (clientish(f) && f.status !== 429 && says(f, ...POLICY_WORDS)),
  },
  {
    reason: "overloaded",
    why: "overload wording, even inside a 429, is the provider's capacity, not our key's budget",
    test: (f) =>
      f.status === 529 ||
      anyType(f, "overloaded_error", "overloaded", "unavailable_error") ||
      ((f.status === null || f.status === 429 || f.status >= 500 || f.status < 400) &&
        says(f, ...OVERLOAD_WORDS)),
  },
  {
    reason: "reasoning_mandatory",
    why: "the request turned reasoning off and this model always reasons: sending it with reasoning left on, or another model, helps",
    test: (f) => clientish(f) && says(f, ...REASONING_MANDATORY),
  },
  {
    reason: "model_incompatible",
    why: "the model lacks a feature the request needs (tools, images, JSON mode, a sampling parameter): checked before 'unsupported parameter' and 'no endpoints found', which these often say too, because another model may have it",
    test: (f) =>
      (clientish(f) && f.status !== 429 && says(f, ...MODEL_INCOMPATIBLE)) ||
      says(f, ...SERVER_STARTED_WITHOUT),
  },
  {
    reason: "invalid_request",
    why: "'unknown parameter' is our request's fault even when it names max_tokens; compressing cannot fix it",
    test: (f) =>
      clientish(f) &&
      (anyType(f, "unsupported_parameter", "unknown_parameter") || says(f, ...UNKNOWN_PARAMETER)),
  },
  {
    reason: "payload_too_large",
    why: "the body's bytes (often images) exceed the endpoint's limit: shrink it",
    test: (f) => f.status === 413 || anyType(f, "request_too_large"),
  },
  {
    reason: "context_overflow",
    why: "the prompt does not fit the model's window, in any of the providers' wordings",
    test: (f) =>
      anyType(f, ...OVERFLOW_TYPES) || (clientish(f) && f.status !== 429 && says(f, ...OVERFLOW_WORDS)),
  },
  {
    reason: "model_not_found",
    why: "this endpoint does not serve the model (or the base URL is wrong): another target may",
    test: (f) =>
      f.status === 404 ||
      anyType(f, "model_not_found", "not_found_error", "notfounderror") ||
      (clientish(f) && f.status !== 429 && says(f, ...MODEL_MISSING)),
  },
  {
    reason: "auth_permanent",
    why: "the key is valid but not allowed this model or region: try another key, then another model",
    test: (f) => f.status === 403 || anyType(f, "permission_error", "permission_denied"),
  },
  {
    reason: "auth",
    why: "the key itself is rejected: the next key of the pool, never the same one again",
    test: (f) =>
      f.status === 401 ||
      anyType(f, "authentication_error", "invalid_api_key", "invalid_authentication") ||
      (clientish(f) && f.status !== 429 && says(f, ...AUTH_WORDS)),
  },
  {
    reason: "rate_limit",
    why: "this key's budget is spent for now: wait as told, or use another key",
    test: (f) =>
      f.status === 429 ||
      anyType(f, "rate_limit_error", "rate_limit_exceeded", "resource_exhausted") ||
      says(f, ...RATE_WORDS),
  },
  {
    reason: "timeout",
    why: "the provider or a gateway in front of it timed out (408, 504, Cloudflare's 524)",
    test: (f) =>
      f.status === 408 || f.status === 504 || f.status === 524 || anyType(f, "timeout", "timeout_error"),
  },
  {
    reason: "server_error",
    why: "a 5xx, or an api_error event inside a stream: the provider failed, not the request",
    test: (f) =>
      (f.status !== null && f.status >= 500) ||
      (!between(f, 400, 499) &&
        anyType(f, "api_error", "server_error", "internal_error", "internal_server_error")),
  },
  {
    reason: "context_overflow",
    why: "a vague 400 for a request we know exceeds the window is the overflow the provider did not name",
    test: (f) => f.status === 400 && f.overflowKnown,
  },
  {
    reason: "invalid_request",
    why: "any other 4xx (or an invalid_request_error event) is the request's fault: nothing to retry",
    test: (f) => between(f, 400, 499) || anyType(f, "invalid_request_error"),
  },
  {
    reason: "format_error",
    why: "a success status with no error we recognise, or text that is not JSON, is a malformed response",
    test: (f) => (f.status === null && f.unparseable) || between(f, 200, 299),
  },
];
