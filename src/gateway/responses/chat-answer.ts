// What Tenax's chat route answers, as the Responses layer reads it: a chat.completion, or the
// chunks of its stream. Checked by schemas, since in the model-gateway mode most of it comes from
// an upstream provider; fields the Responses layer does not use are let through unread.
import { z } from "zod";

const usageSchema = z.object({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number().nullish(),
  prompt_tokens_details: z.object({ cached_tokens: z.number().nullish() }).nullish(),
  completion_tokens_details: z.object({ reasoning_tokens: z.number().nullish() }).nullish(),
});

const toolCallSchema = z.object({
  id: z.string(),
  type: z.literal("function").nullish(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

export const chatCompletionSchema = z.object({
  model: z.string().nullish(),
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z.array(toolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: usageSchema.nullish(),
});

const toolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

export const chatChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            tool_calls: z.array(toolCallDeltaSchema).nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: usageSchema.nullish(),
  /** Tenax's own notes in a stream (`shutdown`); the chat stream never takes back what it sent. */
  tenax: z.object({ event: z.string().nullish() }).nullish(),
});

export type ChatCompletion = z.infer<typeof chatCompletionSchema>;
export type ChatChunk = z.infer<typeof chatChunkSchema>;
export type ChatUsage = z.infer<typeof usageSchema>;
export type ToolCallDelta = z.infer<typeof toolCallDeltaSchema>;
