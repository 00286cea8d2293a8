// The exec policy's values: the policy in force, the dangers found in a command, and the judgement
// the terminal tool acts on.

export type ExecMode = "deny" | "allowlist" | "ask" | "full";

export interface ExecPolicy {
  mode: ExecMode;
  /** Command patterns that run without an approval (tools.exec.allow). */
  allow: readonly string[];
  /**
   * What a word of a command names when it is a secret file (a profile's .env, an SSH key, ...),
   * or null: such a command needs an approval even when read-only or allow-listed.
   */
  secretFile?: (word: string) => string | null;
}

export interface Danger {
  /** The rule's stable name, such as "recursive-delete". */
  rule: string;
  /** The offending simple command, as written. */
  text: string;
  /** Why it is dangerous, in a few words. */
  why: string;
}

export interface Judgement {
  decision: "run" | "ask" | "deny";
  /** One sentence for the model and the operator: the rule, and the setting that would change it. */
  reason: string;
  dangers: Danger[];
  /** Simple commands that are neither read-only nor allow-listed, as written. */
  unlisted: string[];
  /** What an "always for this pattern" approval adds to tools.exec.allow; "" when none fits. */
  pattern: string;
}

/** One simple command of a command line, after quotes are removed and wrappers looked through. */
export interface SimpleCommand {
  /** The command as written, wrappers included. */
  text: string;
  /** Variable assignments before the program (`A=1 cmd`, `env A=1 cmd`), as written. */
  assignments: string[];
  /**
   * Program and arguments, quotes removed; a program named by a path in a system folder
   * (/bin/rm) by its name (rm). Expansions stay as written ("$HOME").
   */
  words: string[];
  /** Whether each of `words` is known before the command runs (no expansion in it). */
  known: boolean[];
  /** Wrappers looked through, outermost first (sudo, env, xargs, ...). */
  wrappers: string[];
  /** Redirections, with the target as the parser read it and the descriptor when one is written (`2` of 2>). */
  redirects: Array<{ operator: string; target: string; descriptor?: string }>;
  /** More arguments arrive only when it runs (xargs), so its targets are unknown. */
  moreArgs: boolean;
}
