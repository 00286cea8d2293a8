// bubblewrap's arguments for one command, from the agent's layout and the command's working
// folder. The order matters, as bwrap mounts in order: the system, the private scratch folders,
// the read-only extras, the roots (a root under /tmp or the home lands on the scratch tmpfs), a
// fresh /proc and /dev (over a root of `/` too), then the masks last, so no root can show them.
import { type SandboxLayout, within } from "./bwrap-layout.js";

export interface BwrapOptions {
  /** Running as root: capabilities are dropped (root could otherwise mount or mknod its way out). */
  root: boolean;
}

/** The folders a command may write: its working folder and the roots, parents first. */
function writable(layout: SandboxLayout, cwd: string): string[] {
  return [...new Set([cwd, ...layout.roots])].sort((a, b) => a.length - b.length);
}

export function bwrapArgs(layout: SandboxLayout, cwd: string, options: BwrapOptions): string[] {
  // A new pid namespace: no /proc of Tenax or its parent. The network is Tenax's own.
  const args = ["--die-with-parent", "--unshare-pid", "--unshare-ipc"];
  if (options.root) args.push("--cap-drop", "ALL");
  for (const s of layout.system)
    args.push(...(s.link === undefined ? ["--ro-bind", s.path, s.path] : ["--symlink", s.link, s.path]));
  for (const path of layout.scratch) args.push("--tmpfs", path);
  for (const path of layout.readOnly) args.push("--ro-bind-try", path, path);
  const roots = writable(layout, cwd);
  for (const path of roots) args.push("--bind-try", path, path);
  args.push("--proc", "/proc", "--dev", "/dev");
  // What a mask hides is hidden only where something shows it (a tmpfs elsewhere would be a
  // folder made for nothing, and on a root it would be made in the real folder).
  const shown = [...layout.system.filter((s) => s.link === undefined).map((s) => s.path), ...layout.readOnly];
  shown.push(...roots);
  // Parents first; one inside a folder already hidden is hidden with it (its own tmpfs would
  // only leave its path behind as empty folders).
  const hidden: string[] = [];
  for (const mask of [...layout.masks].sort((a, b) => a.path.length - b.path.length)) {
    if (!shown.some((path) => within(mask.path, path))) continue;
    if (hidden.some((folder) => within(mask.path, folder))) continue;
    args.push(...(mask.folder ? ["--tmpfs", mask.path] : ["--ro-bind", "/dev/null", mask.path]));
    if (mask.folder) hidden.push(mask.path);
  }
  const masked = hidden.some((folder) => within(cwd, folder));
  // A working folder inside a hidden one (cwd = TENAX_HOME) is an empty folder on its tmpfs.
  if (masked) args.push("--dir", cwd);
  args.push("--chdir", cwd);
  return args;
}
