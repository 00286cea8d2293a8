// `tools` in config.yaml: the agent's safety boundary, one part per kind of tool: `exec` (what
// commands run, and which wait for an approval) and `files` (where the file tools act).
import { z } from "zod";
import { execSchema } from "./tools-exec-schema.js";
import { filesSchema } from "./tools-files-schema.js";

export const toolsSchema = z.strictObject({
  exec: execSchema.prefault({}),
  files: filesSchema.prefault({}),
});
export type ToolsConfig = z.infer<typeof toolsSchema>;
