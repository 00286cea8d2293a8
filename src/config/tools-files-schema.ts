// `tools.files` in config.yaml: where the file tools (read_file, write_file, patch, search_files)
// may act. Filled in by the file-roots work (issue 15).
import { z } from "zod";

export const filesSchema = z.strictObject({});
