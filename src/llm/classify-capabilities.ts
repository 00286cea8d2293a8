// The words and codes of three classified reasons, apart from the rules that use them
// (classify-rules.ts): a certificate the handshake refused (ssl_cert_verification), a model that
// lacks a feature the request needs (model_incompatible), and reasoning a model will not turn off
// (reasoning_mandatory). All matched on lower-cased text and codes.

/**
 * Node's codes (OpenSSL's verify results, lower-cased) for a certificate the handshake would not
 * accept: expired or not yet valid, signed by a CA this machine does not trust, or for another name.
 * A TLS failure that is not about the certificate (a wrong scheme, a reset handshake) is not here.
 */
export const CERTIFICATE_CODES: ReadonlySet<string> = new Set([
  "cert_has_expired",
  "cert_not_yet_valid",
  "cert_revoked",
  "cert_rejected",
  "cert_untrusted",
  "cert_signature_failure",
  "cert_chain_too_long",
  "crl_has_expired",
  "crl_not_yet_valid",
  "depth_zero_self_signed_cert",
  "self_signed_cert_in_chain",
  "unable_to_get_issuer_cert",
  "unable_to_get_issuer_cert_locally",
  "unable_to_verify_leaf_signature",
  "unable_to_decrypt_cert_signature",
  "unable_to_decode_issuer_public_key",
  "unable_to_get_crl",
  "error_in_cert_not_before_field",
  "error_in_cert_not_after_field",
  "invalid_ca",
  "invalid_purpose",
  "path_length_exceeded",
  "hostname_mismatch",
  "err_tls_cert_altname_invalid",
  "err_tls_cert_altname_format",
]);

/** What the request may ask of a model that not every model has, in the providers' own words. */
const FEATURE =
  "(?:tools?|tool_choice|tool use|tool calling|tool calls|functions?|function calling|parallel_tool_calls|images?|image_url|image input|vision|audio|multimodal|response_format|json mode|json_object|json_schema|structured outputs?|temperature|top_p|logprobs|top_logprobs|presence_penalty|frequency_penalty|logit_bias|stop|thinking|reasoning)";
/**
 * A model refusing a feature: OpenAI's "'tools' is not supported with this model" and "image_url is
 * only supported by certain models", Anthropic's and Ollama's "does not support tools|thinking|images",
 * OpenRouter's "No endpoints found that support tool use", llama.cpp's "image input is not supported".
 */
export const MODEL_INCOMPATIBLE = [
  new RegExp(`does not support ${FEATURE}\\b`),
  new RegExp(`\\b'?${FEATURE}'?[^.]{0,60}(?:is|are) not supported (?:with|by|for|on) this model`),
  new RegExp(`\\b${FEATURE}[^.]{0,40}only supported by (?:certain|some) models`),
  new RegExp(`unsupported value: '?${FEATURE}'? does not support .{0,40}with this model`),
  /(?:image|audio|multimodal) input is not supported/,
  /no endpoints found that (?:support|can handle)/,
  /function calling is not enabled/,
];
/** A local server started without the flag a feature needs; llama.cpp says so with a 500. */
export const SERVER_STARTED_WITHOUT = [/requires --(?:jinja|enable-auto-tool-choice|tool-call-parser)/];
/** OpenRouter's "Reasoning is mandatory for this endpoint", OpenAI's reasoning_effort "none" refused, and kin. */
export const REASONING_MANDATORY = [
  /reasoning is (?:mandatory|required)/,
  /(?:reasoning|thinking)(?: mode)?[^.]{0,40}cannot be (?:disabled|turned off)/,
  /(?:reasoning|thinking)(?: mode)? (?:must|has to) be (?:enabled|on)\b/,
  /reasoning_effort'? does not support '?none/,
];
