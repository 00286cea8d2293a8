// A provider configured without api_keys (a local server: Ollama, llama.cpp) whose server refused
// a call: there is no key to disable, the configuration lacks one. This is the failure as the
// operator must read it, for a call (model-call.ts) and for the health probe alike.
import { type ClassifiedError, ProviderError } from "./classified-error.js";
import { REASON_FLAGS } from "./classify-rules.js";

/** The classifier's reasons for a call the server refused for its credentials. */
export function refusesTheKey(classified: Pick<ClassifiedError, "reason">): boolean {
  return classified.reason === "auth" || classified.reason === "auth_permanent";
}

/** `key_required`, naming the server, the provider and the config key that fixes it (the server's words kept). */
export function keyRequired(
  classified: ClassifiedError,
  provider: string,
  endpoint: string,
): ClassifiedError {
  return {
    ...classified,
    reason: "key_required",
    ...REASON_FLAGS.key_required,
    retry_after_ms: null,
    message: `the server at ${endpoint} wants a key (it said: ${classified.message}): add api_keys under providers.${provider} in config.yaml`,
  };
}

/** The same, as the error the credentials layer gives up with. */
export function keyRequiredError(
  classified: ClassifiedError,
  target: { provider: string; model: string },
  endpoint: string,
): ProviderError {
  const error = new ProviderError(
    keyRequired(classified, target.provider, endpoint),
    target.provider,
    target.model,
  );
  error.data.layer = "credentials";
  return error;
}
