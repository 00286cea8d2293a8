// The exec policy's values: the policy in force, the dangers found in a command, and the judgement
// the terminal tool acts on.
import type { Word } from "unbash";

export type ExecMode = "deny" | "allowlist" | "ask" | "full";

export interface ExecPolicy {
  mode: ExecMode;
  /** Command patterns that run without an approval (tools.exec.allow). */
  allow: readonly string[];
  /**
   * Where the command runs and what it cannot open without an approval: a word that names a
   * secret file (a profile's .env, an SSH key, /proc/PID/environ, ...), or that cannot be known
   * before it runs, makes a command ask even when it is read-only or allow-listed.
   */
  place?: CommandPlace;
}

/** Where a command runs, and the files it must not open unasked (see secret-paths.ts). */
export interface CommandPlace {
  /** The working folder it starts in (absolute). */
  cwd: string;
  /** The environment it gets: what `$NAME` is when it runs. */
  env: Readonly<Record<string, string | undefined>>;
  /** What an absolute path is when it is a secret file (by its name or its real path), or null. */
  secretPath(path: string): string | null;
  /** What secret a folder holds somewhere under it (for a command that reads a tree), or null. */
  holdsSecrets(path: string): string | null;
  /** A folder's entry names, to expand a pattern as the shell will; null when it cannot be read. */
  list(dir: string): readonly string[] | null;
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
  /** Each of `words` as the parser read it (quotes, expansions), where there is one. */
  nodes: (Word | undefined)[];
  /**
   * Words of the wrappers looked through (their options and the values of those: `xargs -a FILE`,
   * `env -C DIR`), which may name files too.
   */
  outer: { value: string; known: boolean; node?: Word | undefined }[];
  /** Wrappers looked through, outermost first (sudo, env, xargs, ...). */
  wrappers: string[];
  /**
   * Redirections, with the target as the parser read it (its text and its word) and the descriptor
   * when one is written (`2` of 2>).
   */
  redirects: Array<{ operator: string; target: string; node?: Word | undefined; descriptor?: string }>;
  /** More arguments arrive only when it runs (xargs), so its targets are unknown. */
  moreArgs: boolean;
}
