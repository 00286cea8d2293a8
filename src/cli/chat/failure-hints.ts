// What a failed turn says to the person at the terminal: which layer gave up, on what, and one
// line of what to do about it, per classified reason. The wording lives here and nowhere else.
import type { ErrorReason } from "../../llm/classified-error.js";

export type FailureReason = ErrorReason;

/** A failed turn, as far as the CLI knows it. */
export interface TurnFailure {
  /** The layer that gave up: provider, credentials, fallback, guardrails, agent, ... */
  layer: string;
  reason: FailureReason | null;
  provider: string | null;
  model: string | null;
  /** The HTTP status, when there was a response. */
  status: number | null;
  /** The classified message (the provider's own words, shortened), or the turn's error. */
  message: string;
  /** What the turn itself says to do, for a failure that is no provider's. */
  next: string | null;
  /** How many attempts the retry layer made, and over how long, when it said. */
  attempts: number | null;
  elapsed_ms: number | null;
}

interface Where {
  /** `providers.NAME` in config.yaml. */
  key: string;
  provider: string;
  model: string;
}

/** Per reason: the failure in a few words, and what to do. */
export const FAILURE_HINTS: Readonly<Record<FailureReason, { says: string; todo: (w: Where) => string }>> = {
  unreachable: {
    says: "could not connect",
    todo: (w) =>
      `nothing answered at that address: start the provider's server, or fix ${w.key}.base_url in config.yaml (host, port, DNS name, TLS); tenax status shows every provider`,
  },
  ssl_cert_verification: {
    says: "the provider's TLS certificate was not accepted",
    todo: (w) =>
      `the message above says why: for a private CA set NODE_EXTRA_CA_CERTS to its PEM file and restart Tenax; a clock far off (date -u) fails every certificate; ${w.key}.base_url must use the name the certificate is for`,
  },
  local_resources: {
    says: "Tenax's own process could not open a connection",
    todo: () =>
      "the provider is not at fault: raise the open-file limit (ulimit -n, or LimitNOFILE= for the service) or end what holds connections open, then /retry",
  },
  auth: {
    says: "the provider refused the API key",
    todo: (w) =>
      `put a valid key in ${w.key}.api_keys in config.yaml (or the variable it names in .env); tenax status shows which keys are disabled`,
  },
  auth_permanent: {
    says: "the provider refused the API key for good",
    todo: (w) => `replace the key in ${w.key}.api_keys in config.yaml; a replaced key is tried again at once`,
  },
  key_required: {
    says: "the server refused a call made without a key",
    todo: (w) =>
      `add the server's key as ${w.key}.api_keys in config.yaml (or a variable in .env it names); the next turn calls it again`,
  },
  billing: {
    says: "the account is out of credit or over its spending limit",
    todo: (w) =>
      `add credit or raise the limit with the provider, or add a key of another account to ${w.key}.api_keys, or a model of another provider under fallback in config.yaml`,
  },
  rate_limit: {
    says: "rate limited",
    todo: (w) =>
      `wait a minute and try again (/retry); more keys in ${w.key}.api_keys or a fallback model in config.yaml carry the turn past a limit`,
  },
  overloaded: {
    says: "the provider is overloaded",
    todo: () =>
      "try again in a minute (/retry), or list a model of another provider under fallback in config.yaml",
  },
  server_error: {
    says: "the provider failed on its side",
    todo: () =>
      "try again (/retry); if it goes on, check the provider's status page, or list a fallback model in config.yaml",
  },
  timeout: {
    says: "the provider did not answer in time",
    todo: (w) =>
      `check the network and the provider; slow models may need longer ${w.key}.timeouts (connect, first_byte) in config.yaml`,
  },
  stream_drop: {
    says: "the reply stream was cut off",
    todo: (w) =>
      `try again (/retry); a proxy that closes long streams, or ${w.key}.timeouts.idle in config.yaml, may be the cause`,
  },
  context_overflow: {
    says: "the conversation does not fit the model's context window",
    todo: (w) =>
      `/compress, or /new for a fresh session; or set ${w.key}.models.${w.model}.context_window to the model's real window so compression starts in time`,
  },
  payload_too_large: {
    says: "the request is larger than the provider takes",
    todo: () => "/compress, or /new for a fresh session; large tool results or files are the usual cause",
  },
  long_context_tier: {
    says: "this account has no access to the provider's long-context tier",
    todo: () => "enable long context with the provider, or /compress to shorten the conversation",
  },
  model_not_found: {
    says: "the provider does not serve this model",
    todo: (w) =>
      `fix the model name (model.name, or the fallback entry for ${w.provider}) in config.yaml; the provider's model list has the valid names`,
  },
  model_incompatible: {
    says: "this model cannot do what the request needs (tools, images, a JSON format or a parameter)",
    todo: (w) =>
      `use a model that has the feature (/model), or list one under fallback in config.yaml; ${w.provider}'s model page says what ${w.model} supports`,
  },
  reasoning_mandatory: {
    says: "this model always reasons, and the request turned reasoning off",
    todo: () =>
      "leave reasoning on for this model (drop reasoning_effort none or reasoning.enabled false), or list another model under fallback in config.yaml",
  },
  content_policy_blocked: {
    says: "the provider's content filter refused the request",
    todo: () => "rephrase the request, or list a model of another provider under fallback in config.yaml",
  },
  invalid_request: {
    says: "the provider rejected the request as invalid",
    todo: (w) =>
      `the provider may not support an option Tenax sent: check ${w.key}.type and base_url in config.yaml; tenax doctor checks the setup`,
  },
  format_error: {
    says: "the provider's answer could not be read",
    todo: (w) =>
      `try again (/retry); if it goes on, check that ${w.key}.base_url points at an OpenAI-compatible API`,
  },
  thinking_signature: {
    says: "the provider refused the reasoning replayed from earlier in the session, even once it was left out",
    todo: () => "/new for a fresh session, or /branch and go on there",
  },
  aborted: {
    says: "stopped",
    todo: () => "nothing to do: the turn was stopped on purpose",
  },
  reply_diverged: {
    says: "the reply stream was cut off, and its retry said something else than what was already shown",
    todo: () => "try again (/retry): the text shown so far is not an answer",
  },
  circuit_open: {
    says: "the model failed repeatedly and its circuit breaker is open, so it was not called",
    todo: (w) =>
      `try again once the breaker lets a probe call through (the message says when), or list a model of another provider under fallback in config.yaml; tenax status shows each model's circuit (${w.provider}/${w.model})`,
  },
  unknown: {
    says: "failed in a way Tenax could not classify",
    todo: () =>
      "try again (/retry); tenax status and tenax doctor show each layer; the message above is the provider's",
  },
};

export interface Explained {
  /** What failed, where, in one line (without a leading "error:"). */
  headline: string;
  /** One line of what to do. */
  todo: string;
}

const GENERIC_TODO = "tenax status shows which layer is failing, and tenax doctor checks the setup";

/** The two lines a failed turn ends with. */
export function explainFailure(failure: TurnFailure): Explained {
  const tried =
    failure.attempts !== null && failure.attempts > 1
      ? `; gave up after ${failure.attempts} attempts${
          failure.elapsed_ms === null ? "" : ` in ${(failure.elapsed_ms / 1000).toFixed(1)} s`
        }`
      : "";
  const layer = `${failure.layer} layer`;
  if (failure.reason === null || failure.provider === null) {
    return {
      headline: `turn failed (${layer}): ${failure.message}${tried}`,
      todo: failure.next ?? GENERIC_TODO,
    };
  }
  const model = failure.model ?? "";
  const where: Where = { key: `providers.${failure.provider}`, provider: failure.provider, model };
  const hint = FAILURE_HINTS[failure.reason];
  const target = `${failure.provider}/${model}`;
  const status = failure.status === null ? "" : ` (HTTP ${failure.status})`;
  // The classifier's words already name the address and the cause ("could not connect to URL
  // (connection refused): is the provider running?"), or whose fault it is (EMFILE: ours).
  if (failure.reason === "unreachable" || failure.reason === "local_resources")
    return {
      headline: `turn failed (${layer}, ${failure.reason}): ${target}: ${failure.message}${tried}`,
      todo: hint.todo(where),
    };
  return {
    headline: `turn failed (${layer}, ${failure.reason}): ${target}: ${hint.says}${status}: ${failure.message}${tried}`,
    todo: hint.todo(where),
  };
}
