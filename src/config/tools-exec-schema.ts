// `tools.exec` in config.yaml: the exec policy of the terminal tool. Filled in by the exec-policy
// work (issue 15).
import { z } from "zod";

/** An environment variable's name, as a shell would take it. */
const variableName = z.string({ error: "expected a variable name" }).regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
  error: "expected a variable name (letters, digits and _, not first a digit)",
});

export const execSchema = z.strictObject({
  mode: z.enum(["deny", "allowlist", "ask", "full"]).default("ask"),
  allow: z.array(z.string()).default([]),
  approval_timeout: z.number().int().positive().default(300),
  /**
   * Variables of Tenax's own environment that commands also inherit, beyond PATH, HOME, LANG,
   * TERM and the rest of the base list (src/agent/child-env.ts); never one of Tenax's secrets.
   */
  env: z.array(variableName, { error: "expected a list of variable names" }).default([]),
});
