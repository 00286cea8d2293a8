// `stream_options.include_obfuscation` (Chat Completions and Responses alike): OpenAI pads its
// stream events with random characters against length side channels when it is true. Tenax's
// streams carry no such padding, so true is refused by name; false or left out is what they do.
import { z } from "zod";

export const NO_OBFUSCATION =
  "Tenax's streams carry no obfuscation padding; leave include_obfuscation out or send false";

/** false, null or left out; true is a 400 that says why. */
export const includeObfuscation = z
  .unknown()
  .refine((v) => v === undefined || v === null || v === false, {
    message: NO_OBFUSCATION,
    params: { code: "unsupported_field" },
  })
  .optional();
