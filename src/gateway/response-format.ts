// The OpenAI `response_format` field as both modes take it (an agent turn applies it to each of its
// model calls, a model call to its one): text, any JSON object, or JSON for a schema, checked by
// one schema and turned into the router's ResponseFormat.
import { z } from "zod";
import type { ResponseFormat } from "../llm/provider.js";

export const RESPONSE_FORMAT = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("text") }),
  z.strictObject({ type: z.literal("json_object") }),
  z.strictObject({
    type: z.literal("json_schema"),
    json_schema: z.strictObject({
      name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, "expected 1 to 64 letters, digits, _ or -"),
      description: z.string().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullish(),
    }),
  }),
]);

export function toResponseFormat(format: z.infer<typeof RESPONSE_FORMAT>): ResponseFormat {
  if (format.type !== "json_schema") return { type: format.type };
  const s = format.json_schema;
  return {
    type: "json_schema",
    name: s.name,
    ...(s.schema === undefined ? {} : { schema: s.schema }),
    ...(s.description === undefined ? {} : { description: s.description }),
    ...(s.strict == null ? {} : { strict: s.strict }),
  };
}
