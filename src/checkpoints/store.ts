// The checkpoint store: snapshots of project folders in one shadow git repository under
// TENAX_HOME, taken before the agent changes files, listed, diffed and restored on request.
//
// Design. Every project shares one bare repository (see layout.ts), so a file with the same
// bytes in two projects, or in fifty snapshots of one, is one blob. Each project still has its
// own index file and its own ref namespace, and the project's own `.git` is never read or
// written: git runs with GIT_DIR pointing at Tenax's repository, GIT_WORK_TREE at the project,
// and no user or system config (git.ts). A snapshot is a parentless commit with one ref, so
// pruning the oldest is deleting a ref, and because all refs live in the one repository, a
// `git gc` sees every project's snapshots and only drops objects that none of them reaches.
// Unreachable objects are kept for git's default two weeks before gc removes them, which also
// protects objects another process is writing at that moment.

import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { type Clock, realSleep, type Sleep, systemClock } from "../core/deps.js";
import { commandLine, TenaxError, UsageError } from "../core/errors.js";
import { type GitCall, type GitTarget, gitVersion, runGit } from "./git.js";
import {
  canonicalPath,
  isInside,
  type ProjectLayout,
  projectLayout,
  type StoreLayout,
  storeLayout,
} from "./layout.js";
import { ProjectLocks } from "./lock.js";
import { cleanReason, commitMessage, parseCommitMessage } from "./message.js";
import { type ExcludedEntry, walkProject } from "./walk.js";

export interface CheckpointOptions {
  /** TENAX_HOME; the store is HOME/checkpoints/store. */
  home: string;
  /** Snapshots kept per project (config `checkpoints.max_snapshots`); the oldest are pruned. */
  maxSnapshots?: number;
  /** A tree with more files than this (after exclusions) is not snapshotted. */
  maxFiles?: number;
  /** A tree with more bytes than this (after exclusions) is not snapshotted. */
  maxBytes?: number;
  /** The git binary. */
  git?: string;
  clock?: Clock;
  sleep?: Sleep;
  /** How long a snapshot waits for another process working on the same project. */
  lockTimeoutMs?: number;
}

export interface Snapshot {
  /** The short commit id (12 hex digits). */
  id: string;
  /** The project's real absolute path. */
  project: string;
  /** Milliseconds since the epoch. */
  created_at: number;
  reason: string;
  files: number;
}

export type SnapshotResult =
  | { status: "created"; snapshot: Snapshot; excluded?: ExcludedEntry[] }
  | { status: "unchanged"; snapshot: Snapshot; excluded?: ExcludedEntry[] }
  | { status: "skipped"; why: string };

/** One file a restore changed, in words for people: what the restore did to it. */
export interface RestoreChange {
  path: string;
  action: "restored" | "recreated" | "removed";
}

export interface RestoreResult {
  restored: Snapshot;
  /** The snapshot of the present taken first: restoring it undoes this restore. */
  safety: Snapshot | null;
  changes: RestoreChange[];
}

export const DEFAULT_MAX_SNAPSHOTS = 50;
export const DEFAULT_MAX_FILES = 50_000;
export const DEFAULT_MAX_BYTES = 500 * 1024 * 1024;

const ID_LENGTH = 12;
// In the repository's info/attributes, which outranks a project's own .gitattributes: no
// end-of-line conversion, clean or smudge filter, or keyword expansion, so a restore writes
// back exactly the bytes that were snapshotted.
const ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n";
const SEQ_DIGITS = 10;

interface Entry {
  snapshot: Snapshot;
  ref: string;
  commit: string;
  tree: string;
  seq: number;
}

type Present =
  | { ok: true; tree: string; files: number; excluded: ExcludedEntry[] }
  | { ok: false; why: string };

interface Taken {
  result: SnapshotResult;
  tree: string | null;
}

export class CheckpointStore {
  readonly layout: StoreLayout;
  private readonly target: GitTarget;
  private readonly maxSnapshots: number;
  private readonly maxFiles: number;
  private readonly maxBytes: number;
  private readonly clock: Clock;
  private readonly locks: ProjectLocks;
  private readonly tenaxHome: string;
  private ready: Promise<void> | null = null;
  /** TENAX_HOME's real path, never walked into when a project contains it (set by init). */
  private tenaxHomeReal: string | null = null;

  constructor(options: CheckpointOptions) {
    this.layout = storeLayout(options.home);
    this.tenaxHome = options.home;
    this.target = { binary: options.git ?? "git", gitDir: this.layout.repo, home: this.layout.home };
    this.maxSnapshots = Math.max(1, options.maxSnapshots ?? DEFAULT_MAX_SNAPSHOTS);
    this.maxFiles = options.maxFiles ?? DEFAULT_MAX_FILES;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.clock = options.clock ?? systemClock;
    this.locks = new ProjectLocks({
      clock: this.clock,
      sleep: options.sleep ?? realSleep,
      timeoutMs: options.lockTimeoutMs ?? 60_000,
      staleMs: 10 * 60_000,
    });
  }

  /**
   * Snapshot the project as it is now. Never throws for a folder that cannot be snapshotted
   * (missing, too big, inside the store): that is a "skipped" result with the reason.
   */
  async snapshot(projectDir: string, reason: string): Promise<SnapshotResult> {
    const resolved = await this.resolveProject(projectDir).catch((error: unknown) => {
      if (TenaxError.isInstance(error) && error.exitCode === 2) return error.message;
      throw error;
    });
    if (typeof resolved === "string") return { status: "skipped", why: resolved };
    if (!resolved.exists) return { status: "skipped", why: `${resolved.project.path} does not exist` };
    const { project } = resolved;
    if (isInside(project.path, this.layout.root)) {
      return { status: "skipped", why: `${project.path} is inside the checkpoint store itself` };
    }
    await this.ensureReady();
    return this.locked(project, async () => (await this.take(project, reason, null)).result);
  }

  /** The project's snapshots, newest first. */
  async list(projectDir: string): Promise<Snapshot[]> {
    const { project } = await this.resolveProject(projectDir);
    await this.ensureReady();
    return (await this.entries(project)).map((entry) => entry.snapshot);
  }

  /**
   * The snapshot that `ref` names: a snapshot id (or a unique prefix of at least 4 digits), or a
   * number N for the Nth newest (1 = the latest), as `/rollback N` counts.
   */
  async find(projectDir: string, ref: string): Promise<Snapshot> {
    const { project } = await this.resolveProject(projectDir);
    await this.ensureReady();
    return pick(await this.entries(project), ref, project.path).snapshot;
  }

  /** A unified diff from the snapshot `ref` names to the project's present files. */
  async diff(projectDir: string, ref: string): Promise<string> {
    const { project, exists } = await this.resolveProject(projectDir);
    await this.ensureReady();
    return this.locked(project, async () => {
      const entry = pick(await this.entries(project), ref, project.path);
      // A deleted project folder is the empty tree: its diff shows every file removed.
      const present = exists ? await this.present(project) : await this.emptyTree();
      if (!present.ok) throw new TenaxError("checkpoint_too_big", present.why);
      const { stdout } = await this.git([
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        entry.tree,
        present.tree,
      ]);
      return stdout;
    });
  }

  /**
   * Make the project's files match the snapshot `ref` names. The present is snapshotted first
   * (`safety`), so restoring that snapshot undoes this. Excluded paths (secrets, dependencies,
   * build output, the project's `.git`) are never written or removed.
   */
  async restore(projectDir: string, ref: string): Promise<RestoreResult> {
    const { project, exists } = await this.resolveProject(projectDir);
    await this.ensureReady();
    return this.locked(project, async () => {
      const entry = pick(await this.entries(project), ref, project.path);
      if (!exists) await mkdir(project.path, { recursive: true });
      const taken = await this.take(project, `before restoring ${entry.snapshot.id}`, entry.commit);
      if (taken.result.status === "skipped" || taken.tree === null) {
        const why = taken.result.status === "skipped" ? taken.result.why : "unknown";
        throw new TenaxError(
          "checkpoint_restore_refused",
          `nothing was restored: the present files must be snapshotted first so the restore can be undone, and ${why}`,
          { hint: "make the folder smaller (move big data out of it) and try again" },
        );
      }
      const call = { workTree: project.path, indexFile: project.index };
      const changes = await this.changesBetween(taken.tree, entry.tree);
      // A two-tree read-tree is git's own checkout: it writes only the paths that differ,
      // removes the ones the snapshot lacks (and folders left empty), and refuses rather than
      // overwrite a file it does not track. The index matches `taken.tree` at this point.
      await this.git(["read-tree", "-m", "-u", taken.tree, entry.tree], call);
      return { restored: entry.snapshot, safety: taken.result.snapshot, changes };
    });
  }

  /**
   * Remove objects no snapshot of any project reaches any more. Objects younger than
   * `pruneExpire` are kept (git's default, two weeks) since a snapshot in progress may be
   * writing them; tests pass "now".
   */
  async collectGarbage(pruneExpire = "2.weeks.ago"): Promise<void> {
    await this.ensureReady();
    await this.git(["gc", "--quiet", `--prune=${pruneExpire}`]);
  }

  // ---- inside the project lock ----

  private async locked<T>(project: ProjectLayout, fn: () => Promise<T>): Promise<T> {
    await mkdir(project.dir, { recursive: true, mode: 0o700 });
    if (!existsSync(project.pathFile)) await writeFile(project.pathFile, `${project.path}\n`);
    return this.locks.with(project.lock, fn);
  }

  /** Snapshot `project`; `protect` is a commit that pruning must keep (the one being restored). */
  private async take(project: ProjectLayout, reason: string, protect: string | null): Promise<Taken> {
    const present = await this.present(project);
    if (!present.ok) return { result: { status: "skipped", why: present.why }, tree: null };
    const entries = await this.entries(project);
    const latest = entries[0];
    if (latest !== undefined && latest.tree === present.tree) {
      return {
        result: { status: "unchanged", snapshot: latest.snapshot, excluded: present.excluded },
        tree: present.tree,
      };
    }
    const createdAt = this.clock.now();
    const facts = {
      project: project.path,
      created_at: createdAt,
      reason: cleanReason(reason),
      files: present.files,
    };
    const seconds = Math.floor(createdAt / 1000);
    const date = `@${seconds} +0000`;
    const { stdout } = await this.git(["commit-tree", "--no-gpg-sign", present.tree, "-F", "-"], {
      input: commitMessage(facts),
      env: { GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date },
    });
    const commit = stdout.trim();
    const seq = (latest?.seq ?? 0) + 1;
    const ref = `${project.refPrefix}${String(seq).padStart(SEQ_DIGITS, "0")}`;
    // The empty old value means "must not exist yet": two writers can never share a number.
    await this.git(["update-ref", ref, commit, ""]);
    await this.prune([{ ref, commit, seq }, ...entries], protect);
    const snapshot = toSnapshot(commit, facts);
    return { result: { status: "created", snapshot, excluded: present.excluded }, tree: present.tree };
  }

  /** Bring the project's index up to date with its files and write the tree; nothing is committed. */
  private async present(project: ProjectLayout): Promise<Present> {
    // TENAX_HOME (profiles' stores and this store) may sit inside a project such as ~: a
    // restore must never roll those back, and the store must not snapshot itself.
    const home = this.tenaxHomeReal ?? this.tenaxHome;
    const skip = [home, join(home, "checkpoints", "store")];
    const limits = { maxFiles: this.maxFiles, maxBytes: this.maxBytes };
    const walk = await walkProject(project.path, limits, skip);
    if (!walk.ok) return walk;
    let tree: string;
    try {
      tree = await this.indexTree(project, walk.files);
    } catch (error) {
      // The index caches file hashes. If gc removed a blob it still names (a snapshot that
      // failed half-way weeks ago), write-tree fails: start the index over once.
      if (!TenaxError.isInstance(error) || error.code !== "checkpoint_git_failed") throw error;
      await rm(project.index, { force: true });
      tree = await this.indexTree(project, walk.files);
    }
    return { ok: true, tree, files: walk.files.length, excluded: walk.excluded };
  }

  private async emptyTree(): Promise<Present> {
    const { stdout } = await this.git(["mktree", "-z"], { input: "" });
    return { ok: true, tree: stdout.trim(), files: 0, excluded: [] };
  }

  private async indexTree(project: ProjectLayout, files: string[]): Promise<string> {
    const call = { workTree: project.path, indexFile: project.index };
    const listed = await this.git(["ls-files", "-z"], call);
    const keep = new Set(files);
    const gone = listed.stdout.split("\0").filter((path) => path !== "" && !keep.has(path));
    // Removals first, so a file that became a folder (or the reverse) never collides.
    if (gone.length > 0) {
      await this.git(["update-index", "-z", "--force-remove", "--stdin"], { ...call, input: nulList(gone) });
    }
    if (files.length > 0) {
      // Unchanged files (same stat data as in the index) are not read again. --remove drops a
      // file deleted since the walk instead of failing.
      await this.git(["update-index", "-z", "--add", "--remove", "--replace", "--stdin"], {
        ...call,
        input: nulList(files),
      });
    }
    return (await this.git(["write-tree"], call)).stdout.trim();
  }

  private async prune(entries: Array<Pick<Entry, "ref" | "commit" | "seq">>, protect: string | null) {
    const newestFirst = [...entries].sort((a, b) => b.seq - a.seq);
    const doomed = newestFirst.slice(this.maxSnapshots).filter((entry) => entry.commit !== protect);
    if (doomed.length === 0) return;
    const input = doomed.map((entry) => `delete ${entry.ref} ${entry.commit}\n`).join("");
    await this.git(["update-ref", "--stdin"], { input });
    // Below git's thresholds this only counts loose objects. Not during a restore: the target's
    // objects must stay until it is checked out.
    if (protect === null) await this.git(["gc", "--auto", "--quiet"]);
  }

  private async changesBetween(presentTree: string, snapshotTree: string): Promise<RestoreChange[]> {
    const { stdout } = await this.git([
      "diff-tree",
      "-r",
      "-z",
      "--no-renames",
      "--name-status",
      presentTree,
      snapshotTree,
    ]);
    const fields = stdout.split("\0");
    const changes: RestoreChange[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const status = fields[i] ?? "";
      const path = fields[i + 1] ?? "";
      if (status === "") continue;
      const action = status === "A" ? "recreated" : status === "D" ? "removed" : "restored";
      changes.push({ path, action });
    }
    return changes;
  }

  // ---- reading the store ----

  private async entries(project: ProjectLayout): Promise<Entry[]> {
    const { stdout } = await this.git([
      "for-each-ref",
      "--sort=-refname",
      "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents)%00",
      project.refPrefix,
    ]);
    const fields = stdout.split("\0");
    const entries: Entry[] = [];
    for (let i = 0; i + 3 < fields.length; i += 4) {
      const ref = (fields[i] ?? "").trim();
      const commit = fields[i + 1] ?? "";
      const tree = fields[i + 2] ?? "";
      const facts = parseCommitMessage(fields[i + 3] ?? "");
      const seq = Number(ref.slice(project.refPrefix.length));
      if (facts === null || !Number.isSafeInteger(seq)) continue;
      entries.push({ snapshot: toSnapshot(commit, facts), ref, commit, tree, seq });
    }
    return entries;
  }

  // ---- setup ----

  private async resolveProject(projectDir: string): Promise<{ project: ProjectLayout; exists: boolean }> {
    const { path, exists } = await canonicalPath(projectDir);
    return { project: projectLayout(this.layout, path), exists };
  }

  private ensureReady(): Promise<void> {
    this.ready ??= this.init().catch((error: unknown) => {
      this.ready = null;
      throw error;
    });
    return this.ready;
  }

  private async init(): Promise<void> {
    await gitVersion(this.target);
    await mkdir(this.layout.home, { recursive: true, mode: 0o700 });
    await mkdir(this.layout.projects, { recursive: true, mode: 0o700 });
    this.tenaxHomeReal = (await canonicalPath(this.tenaxHome)).path;
    if (!existsSync(join(this.layout.repo, "HEAD"))) await this.createRepository();
    const file = join(this.layout.repo, "info", "attributes");
    if ((await readFile(file, "utf8").catch(() => null)) !== ATTRIBUTES) {
      await mkdir(dirname(file), { recursive: true });
      await writeAtomically(file, ATTRIBUTES);
    }
  }

  /**
   * Made in a private folder and renamed into place, so processes that start at the same time
   * never run `git init` over each other: one rename wins and the others use its repository.
   */
  private async createRepository(): Promise<void> {
    const staging = `${this.layout.repo}.${process.pid}.${randomBytes(4).toString("hex")}`;
    try {
      // No template: no sample hooks, nothing but what git needs.
      await runGit({ ...this.target, gitDir: staging }, ["init", "--bare", "--quiet", "--template="]);
      await mkdir(join(staging, "info"), { recursive: true });
      await writeFile(join(staging, "info", "attributes"), ATTRIBUTES);
      await rename(staging, this.layout.repo);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (!existsSync(join(this.layout.repo, "HEAD")) || (code !== "ENOTEMPTY" && code !== "EEXIST")) {
        throw error;
      }
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }

  private git(args: readonly string[], call: GitCall = {}) {
    return runGit(this.target, args, call);
  }
}

function toSnapshot(commit: string, facts: Omit<Snapshot, "id">): Snapshot {
  return {
    id: commit.slice(0, ID_LENGTH),
    project: facts.project,
    created_at: facts.created_at,
    reason: facts.reason,
    files: facts.files,
  };
}

async function writeAtomically(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}`;
  await writeFile(temporary, content);
  await rename(temporary, file);
}

function nulList(paths: readonly string[]): string {
  return paths.map((path) => `${path}\0`).join("");
}

function pick(entries: Entry[], ref: string, project: string): Entry {
  const wanted = ref.trim().toLowerCase();
  const hint = `see them with: ${commandLine(["tenax", "checkpoints", "list", "--project", project])}`;
  if (entries.length === 0) {
    throw new UsageError(`no checkpoints of ${project} yet`, {
      hint: "checkpoints are taken when the agent changes files with checkpoints on (tenax chat --checkpoints, or checkpoints: { enabled: true } in config.yaml)",
    });
  }
  const byId = /^[0-9a-f]{4,40}$/.test(wanted) ? entries.filter((e) => e.commit.startsWith(wanted)) : [];
  const n = /^[0-9]+$/.test(wanted) ? Number(wanted) : Number.NaN;
  const byNumber = n >= 1 && n <= entries.length ? entries[n - 1] : undefined;
  if (byId.length === 1 && byNumber === undefined) return byId[0] as Entry;
  if (byId.length === 0 && byNumber !== undefined) return byNumber;
  if (byId.length > 1 || (byId.length === 1 && byNumber !== undefined)) {
    throw new UsageError(`"${ref}" names more than one checkpoint of ${project}`, {
      hint: `give more digits of the id; ${hint}`,
    });
  }
  throw new UsageError(`no checkpoint "${ref}" of ${project} (it has ${entries.length})`, {
    hint: `give an id or a number from 1 (the latest) to ${entries.length}; ${hint}`,
  });
}
