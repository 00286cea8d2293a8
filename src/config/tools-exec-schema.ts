// `tools.exec` in config.yaml: the exec policy of the terminal tool (which commands run, which wait
// for an approval, which are refused) and the environment commands inherit.
import { z } from "zod";
import { positiveInt } from "./schema-parts.js";

/** An environment variable's name, as a shell would take it. */
const variableName = z.string({ error: "expected a variable name" }).regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
  error: "expected a variable name (letters, digits and _, not first a digit)",
});

/**
 * A command pattern: the words of one simple command, `*` as the last word for any rest
 * ("npm test", "npm run *"); see src/agent/exec-policy/patterns.ts.
 */
const commandPattern = z
  .string({ error: 'expected a command pattern such as "npm test" or "npm run *"' })
  .refine((pattern) => pattern.trim() !== "", {
    error: 'expected a command pattern such as "npm test" or "npm run *", not an empty string',
  });

export const execSchema = z.strictObject({
  /**
   * deny: no command runs; allowlist: only read-only and allow-listed commands run, the rest are
   * refused; ask (the default): the rest wait for an approval; full: every command runs. Dangerous
   * commands wait for an approval in every mode but full.
   */
  mode: z
    .enum(["deny", "allowlist", "ask", "full"], { error: "expected one of deny, allowlist, ask, full" })
    .default("ask"),
  /** Patterns of commands that run without an approval (in allowlist and ask modes). */
  allow: z.array(commandPattern, { error: "expected a list of command patterns" }).default([]),
  /** Seconds a pending approval waits before it counts as denied. */
  approval_timeout: positiveInt("a number of seconds (a positive integer)").default(300),
  /**
   * Variables of Tenax's own environment that commands also inherit, beyond PATH, HOME, LANG,
   * TERM and the rest of the base list (src/agent/child-env.ts); never one of Tenax's secrets.
   */
  env: z.array(variableName, { error: "expected a list of variable names" }).default([]),
  /**
   * Where commands run. bwrap: in a bubblewrap sandbox (a pid namespace of their own; only the
   * system's folders read-only, the working folder and tools.files.roots read-write; never
   * Tenax's home, the profile or the credential stores), and Tenax refuses to start without it;
   * auto (the default): there when bubblewrap is installed and works, else on the machine (tenax
   * doctor says which); none: on the machine. docs/SECURITY.md says what each reaches.
   */
  sandbox: z.enum(["auto", "bwrap", "none"], { error: "expected one of auto, bwrap, none" }).default("auto"),
});
export type ExecConfig = z.infer<typeof execSchema>;
