// The OpenAI sampling fields both modes honour (max_tokens, max_completion_tokens, temperature,
// top_p, frequency_penalty, presence_penalty, stop, seed, user), checked by one schema and turned
// into the router's SamplingParams and output cap: an agent turn applies them to each of its model
// calls, a model call to its one.
import { z } from "zod";
import type { SamplingParams } from "../llm/provider.js";

const tokens = z
  .number({ error: "must be a whole number of tokens (1 or more)" })
  .int({ error: "must be a whole number of tokens (1 or more)" })
  .min(1, { error: "must be a whole number of tokens (1 or more)" })
  .nullish();

const penalty = z
  .number({ error: "must be a number from -2 to 2" })
  .min(-2, { error: "must be a number from -2 to 2" })
  .max(2, { error: "must be a number from -2 to 2" })
  .nullish();

export const SAMPLING_FIELDS = {
  max_tokens: tokens,
  max_completion_tokens: tokens,
  temperature: z
    .number({ error: "must be a number from 0 to 2" })
    .min(0, { error: "must be a number from 0 to 2" })
    .max(2, { error: "must be a number from 0 to 2" })
    .nullish(),
  top_p: z
    .number({ error: "must be a number from 0 to 1" })
    .min(0, { error: "must be a number from 0 to 1" })
    .max(1, { error: "must be a number from 0 to 1" })
    .nullish(),
  frequency_penalty: penalty,
  presence_penalty: penalty,
  stop: z
    .union([z.string(), z.array(z.string()).max(4, { error: "must hold at most 4 sequences" })], {
      error: "must be a string or a list of at most 4 strings",
    })
    .nullish(),
  seed: z.number({ error: "must be a whole number" }).int({ error: "must be a whole number" }).nullish(),
  user: z.string({ error: "must be a string" }).nullish(),
};

type SamplingBody = { [K in keyof typeof SAMPLING_FIELDS]?: z.infer<(typeof SAMPLING_FIELDS)[K]> };

/** The output cap (max_completion_tokens over max_tokens) and the sampling params a body sets. */
export function samplingOf(b: SamplingBody): { maxTokens: number | null; params: SamplingParams } {
  const params: SamplingParams = {};
  if (b.temperature != null) params.temperature = b.temperature;
  if (b.top_p != null) params.top_p = b.top_p;
  if (b.frequency_penalty != null) params.frequency_penalty = b.frequency_penalty;
  if (b.presence_penalty != null) params.presence_penalty = b.presence_penalty;
  if (b.stop != null) params.stop = typeof b.stop === "string" ? [b.stop] : b.stop;
  if (b.seed != null) params.seed = b.seed;
  if (b.user != null) params.user = b.user;
  return { maxTokens: b.max_completion_tokens ?? b.max_tokens ?? null, params };
}
