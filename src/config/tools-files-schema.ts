// `tools.files` in config.yaml: where the file tools (read_file, write_file, patch, search_files)
// may act. The policy itself is src/agent/tools/file-roots.ts.
import { z } from "zod";

const ROOT = "expected an absolute path or one starting with ~/ (a folder or a file)";

/** A folder or file the file tools may reach beyond the working folder; `~` is the user's home. */
const root = z
  .string({ error: ROOT })
  .refine((value) => value === "~" || value.startsWith("~/") || value.startsWith("/"), { error: ROOT });

export const filesSchema = z.strictObject({
  /**
   * `roots`: the tools act only inside the session's working folder and `roots`. `full`: anywhere
   * Tenax's user can reach. Secret files are refused in both unless a root names them.
   */
  mode: z.enum(["roots", "full"], { error: "expected roots or full" }).default("roots"),
  roots: z.array(root, { error: "expected a list of absolute paths (folders or files)" }).default([]),
});
export type FilesConfig = z.infer<typeof filesSchema>;
