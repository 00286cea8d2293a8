// bwrap's arguments as data: the order that keeps a root from showing what is hidden, and what is
// left out. (What a command really sees in the sandbox is sandbox.test.ts.)
import { describe, expect, it } from "vitest";
import { bwrapArgs } from "./bwrap-args.js";
import type { SandboxLayout } from "./bwrap-layout.js";

const layout: SandboxLayout = {
  system: [{ path: "/usr" }, { path: "/bin", link: "usr/bin" }, { path: "/etc" }],
  readOnly: ["/opt/node"],
  scratch: ["/tmp", "/var/tmp", "/home/op"],
  roots: ["/srv/data"],
  masks: [
    { path: "/home/op/.tenax/profiles/work", folder: true },
    { path: "/home/op/.tenax", folder: true },
    { path: "/home/op/.ssh", folder: true },
    { path: "/etc/shadow", folder: false },
  ],
  home: "/home/op",
};

/** Where each flag with its paths stands in the arguments. */
const at = (args: string[], ...words: string[]) =>
  args.findIndex((_, i) => words.every((w, k) => args[i + k] === w));

describe("bwrapArgs", () => {
  it("a new pid namespace that dies with Tenax, capabilities dropped only as root", () => {
    const args = bwrapArgs(layout, "/home/op/project", { root: true });
    expect(args.slice(0, 5)).toEqual([
      "--die-with-parent",
      "--unshare-pid",
      "--unshare-ipc",
      "--cap-drop",
      "ALL",
    ]);
    expect(bwrapArgs(layout, "/home/op/project", { root: false })).not.toContain("--cap-drop");
    expect(args).not.toContain("--unshare-net");
    expect(args).not.toContain("--new-session");
  });

  it("mounts the scratch folders, then the roots on them, then /proc, then the masks, then goes to the folder", () => {
    const args = bwrapArgs(layout, "/home/op/project", { root: false });
    expect(at(args, "--ro-bind", "/usr", "/usr")).toBeGreaterThanOrEqual(0);
    expect(at(args, "--symlink", "usr/bin", "/bin")).toBeGreaterThanOrEqual(0);
    const home = at(args, "--tmpfs", "/home/op");
    const project = at(args, "--bind-try", "/home/op/project", "/home/op/project");
    const proc = at(args, "--proc", "/proc");
    const shadow = at(args, "--ro-bind", "/dev/null", "/etc/shadow");
    expect(home).toBeLessThan(project);
    expect(at(args, "--bind-try", "/srv/data", "/srv/data")).toBeGreaterThan(home);
    expect(project).toBeLessThan(proc);
    expect(proc).toBeLessThan(shadow);
    expect(args.slice(-2)).toEqual(["--chdir", "/home/op/project"]);
    // Nothing shows Tenax's home or ~/.ssh here (the home is a scratch tmpfs): no mask for them.
    expect(args).not.toContain("/home/op/.tenax");
    expect(args).not.toContain("/home/op/.ssh");
  });

  it("hides Tenax's home and ~/.ssh from a root that holds them, once, and makes the folder it works in", () => {
    const inHome = bwrapArgs(layout, "/home/op", { root: false });
    expect(at(inHome, "--tmpfs", "/home/op/.tenax")).toBeGreaterThan(
      at(inHome, "--bind-try", "/home/op", "/home/op"),
    );
    expect(at(inHome, "--tmpfs", "/home/op/.ssh")).toBeGreaterThan(0);
    // The profile is inside the home that is hidden already: no tmpfs of its own to leave its path.
    expect(inHome).not.toContain("/home/op/.tenax/profiles/work");
    expect(inHome).not.toContain("--dir");
    // Working in the profile: only that folder shows, and it is hidden as an empty one.
    const work = "/home/op/.tenax/profiles/work";
    const inProfile = bwrapArgs(layout, work, { root: false });
    expect(at(inProfile, "--tmpfs", work)).toBeGreaterThan(at(inProfile, "--bind-try", work, work));
    expect(inProfile.slice(-4)).toEqual(["--dir", work, "--chdir", work]);
  });

  it("a root of / brings the machine's own /proc, so the sandbox's /proc is mounted after it", () => {
    const args = bwrapArgs(layout, "/", { root: false });
    expect(at(args, "--proc", "/proc")).toBeGreaterThan(at(args, "--bind-try", "/", "/"));
    expect(at(args, "--tmpfs", "/home/op/.tenax")).toBeGreaterThan(at(args, "--proc", "/proc"));
  });
});
