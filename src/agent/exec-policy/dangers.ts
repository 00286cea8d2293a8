// The dangerous-command rules, each over one simple command (quotes removed, wrappers looked
// through). They hold in every mode but full, whatever tools.exec.allow says.
import { isBroadPath, isHarmlessDevice, isUnderEtc, normalisePath } from "./paths.js";
import type { Danger, SimpleCommand } from "./types.js";
import { baseName, findStarts } from "./wrappers.js";

type Rule = (command: SimpleCommand, program: string, args: readonly string[]) => string | null;

const OUTPUT = new Set([">", ">>", ">|", "&>", "&>>", "<>"]);

/** Arguments that are not options, all of them after `--`. */
function operands(args: readonly string[]): string[] {
  const end = args.indexOf("--");
  const before = (end < 0 ? args : args.slice(0, end)).filter((a) => !a.startsWith("-") || a === "-");
  return end < 0 ? before : [...before, ...args.slice(end + 1)];
}

/** Whether a short option cluster (-rf) or a long option (--recursive) is given. */
function hasOption(args: readonly string[], short: RegExp, long: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some(
    (a) =>
      (/^-[A-Za-z]+$/.test(a) && short.test(a.slice(1))) ||
      long.some((l) => a === l || a.startsWith(`${l}=`)),
  );
}

const recursiveDelete: Rule = (command, program, args) => {
  if (program === "find") {
    // find selects what it deletes, so only a system or home tree counts as broad for it.
    const { starts } = findStarts(args);
    if (args.includes("-delete") && (starts.length === 0 ? ["."] : starts).some((s) => isBroadPath(s, false)))
      return "find -delete on a broad tree";
    return null;
  }
  if (program !== "rm") return null;
  if (args.includes("--no-preserve-root")) return "rm told not to spare the root";
  if (!hasOption(args, /[rR]/, ["--recursive"])) return null;
  if (command.moreArgs) return "a recursive delete of paths known only when it runs";
  const broad = operands(args).find((a) => isBroadPath(a));
  return broad === undefined ? null : `a recursive delete of ${broad}`;
};

const makeFilesystem: Rule = (_command, program) =>
  /^(mkfs(\..+)?|mke2fs|mkswap|wipefs|mkntfs|mkdosfs)$/.test(program) ? "formats a device" : null;

const writeDevice: Rule = (command, program, args) => {
  const device = (target: string) => normalisePath(target).startsWith("/dev/") && !isHarmlessDevice(target);
  const of = program === "dd" ? args.find((a) => a.startsWith("of=") && device(a.slice(3))) : undefined;
  if (of !== undefined) return `writes raw data to ${of.slice(3)}`;
  const redirect = command.redirects.find((r) => OUTPUT.has(r.operator) && device(r.target));
  if (redirect !== undefined) return `writes to the device ${redirect.target}`;
  if (program === "tee" || program === "cp") {
    const target = operands(args).find(device);
    if (target !== undefined) return `writes to the device ${target}`;
  }
  return null;
};

const recursivePermissions: Rule = (_command, program, args) => {
  if (!["chmod", "chown", "chgrp"].includes(program)) return null;
  if (!hasOption(args, /R/, ["--recursive"])) return null;
  const target = operands(args).find((a) => isBroadPath(a, false));
  return target === undefined ? null : `changes the owner or mode of everything under ${target}`;
};

const privilege: Rule = (command, program) => {
  const raising = ["sudo", "su", "doas", "pkexec", "run0"];
  const via = command.wrappers.find((w) => raising.includes(w));
  if (via !== undefined) return `runs as another user through ${via}`;
  return raising.includes(program) ? `runs as another user through ${program}` : null;
};

/** The targets a file-changing program writes to. */
function writeTargets(program: string, args: readonly string[]): string[] {
  const files = operands(args);
  if (["cp", "install", "ln", "rsync", "scp"].includes(program)) {
    const at = args.findIndex((a) => a === "-t" || a === "--target-directory");
    const inline = args.find((a) => a.startsWith("--target-directory="));
    if (at >= 0) return [args[at + 1] ?? ""];
    if (inline !== undefined) return [inline.slice(inline.indexOf("=") + 1)];
    return files.slice(-1);
  }
  if (["sed", "perl"].includes(program))
    return args.some((a) => /^-[A-Za-z]*i/.test(a) || a.startsWith("--in-place")) ? files : [];
  if (program === "dd") return args.filter((a) => a.startsWith("of=")).map((a) => a.slice(3));
  const writers = [
    "mv",
    "tee",
    "rm",
    "touch",
    "truncate",
    "mkdir",
    "rmdir",
    "unlink",
    "shred",
    "chmod",
    "chown",
  ];
  return writers.concat(["chgrp", "chattr", "patch"]).includes(program) ? files : [];
}

const writeEtc: Rule = (command, program, args) => {
  const redirect = command.redirects.find((r) => OUTPUT.has(r.operator) && isUnderEtc(r.target));
  if (redirect !== undefined) return `writes to ${redirect.target}`;
  const target = writeTargets(program, args).find(isUnderEtc);
  return target === undefined ? null : `changes ${target}`;
};

const GIT_VALUE_OPTIONS = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"]);

const forcePush: Rule = (_command, program, args) => {
  if (program !== "git") return null;
  let i = 0;
  while (i < args.length && (args[i] ?? "").startsWith("-"))
    i += GIT_VALUE_OPTIONS.has(args[i] ?? "") ? 2 : 1;
  if (args[i] !== "push") return null;
  const rest = args.slice(i + 1);
  if (hasOption(rest, /f/, ["--force", "--force-with-lease", "--force-if-includes", "--mirror"]))
    return "rewrites the remote's history";
  const plus = operands(rest).find((a) => a.startsWith("+"));
  return plus === undefined ? null : `rewrites the remote's history (${plus})`;
};

const TENAX = /tenax|\bnode(js)?\b/i;

const stopTenax: Rule = (command, program, args) => {
  if (program === "pkill" || program === "killall") {
    const target = args.find((a) => !a.startsWith("-") && TENAX.test(a));
    return target === undefined ? null : `may stop Tenax itself (${target})`;
  }
  if (program === "kill") {
    // $PPID is the shell's parent: Tenax itself.
    const target = args.find((a) => TENAX.test(a) || /\$\{?PPID\b/.test(a));
    if (target !== undefined) return `may stop Tenax itself (${target})`;
    // After the signal (-9, -s KILL, -n 9), pid -1 is every process the user may signal, 0 the group.
    const skip = args[0] === "-s" || args[0] === "-n" ? 2 : args[0]?.startsWith("-") ? 1 : 0;
    const pids = args.slice(skip).filter((a) => a !== "--");
    return pids.some((a) => a === "-1" || a === "0") ? "signals every process it may, Tenax included" : null;
  }
  if (program === "tenax" || program === "node" || (program === "npx" && command.words[1] === "tenax")) {
    const words = args.filter((a) => !a.startsWith("-"));
    const at = words.indexOf("gateway");
    if (at >= 0 && ["stop", "restart", "uninstall"].includes(words[at + 1] ?? ""))
      return "stops the Tenax gateway";
    return null;
  }
  const words = args.filter((a) => !a.startsWith("-"));
  if (program === "systemctl" && ["stop", "kill", "restart", "disable", "mask"].includes(words[0] ?? ""))
    return words.slice(1).some((w) => /^tenax/i.test(w)) ? "stops the Tenax service" : null;
  if (program === "service" && /^tenax/i.test(words[0] ?? "") && ["stop", "restart"].includes(words[1] ?? ""))
    return "stops the Tenax service";
  return null;
};

const shutdown: Rule = (command, program, args) => {
  if (["shutdown", "reboot", "halt", "poweroff"].includes(program)) return "stops or restarts the machine";
  if (
    command.redirects.some((r) => OUTPUT.has(r.operator) && normalisePath(r.target) === "/proc/sysrq-trigger")
  )
    return "asks the kernel directly to stop or restart the machine";
  const words = args.filter((a) => !a.startsWith("-"));
  if ((program === "init" || program === "telinit") && ["0", "6"].includes(words[0] ?? ""))
    return "stops or restarts the machine";
  if (program !== "systemctl") return null;
  if (["poweroff", "reboot", "halt", "kexec", "rescue", "emergency", "soft-reboot"].includes(words[0] ?? ""))
    return "stops or restarts the machine";
  if (words[0] === "isolate" && /poweroff|reboot|halt|rescue|emergency|runlevel[016]/.test(words[1] ?? ""))
    return "stops or restarts the machine";
  return null;
};

const RULES: ReadonlyArray<[string, Rule]> = [
  ["recursive-delete", recursiveDelete],
  ["make-filesystem", makeFilesystem],
  ["write-device", writeDevice],
  ["recursive-permissions", recursivePermissions],
  ["privilege", privilege],
  ["write-etc", writeEtc],
  ["force-push", forcePush],
  ["stop-tenax", stopTenax],
  ["shutdown", shutdown],
];

/** The dangers of one simple command, by rule. */
export function commandDangers(command: SimpleCommand): Danger[] {
  // Lowercase too: on a case-insensitive file system RM is rm.
  const program = baseName(command.words[0] ?? "").toLowerCase();
  const args = command.words.slice(1);
  return RULES.flatMap(([rule, check]) => {
    const why = check(command, program, args);
    return why === null ? [] : [{ rule, text: command.text, why }];
  });
}
