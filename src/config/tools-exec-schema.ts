// `tools.exec` in config.yaml: the exec policy of the terminal tool. Filled in by the exec-policy
// work (issue 15).
import { z } from "zod";

export const execSchema = z.strictObject({});
