// The owner tag (ownerOf's "pid:N@START") of a real process that has ended: what a lease left by a
// gateway killed with -9 names. The start time in it means no later process can match it.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { identify } from "../../src/core/process-identity.js";

export async function deadOwnerTag(): Promise<string> {
  const child = spawn("sleep", ["30"]);
  const id = identify(child.pid ?? 0);
  child.kill("SIGKILL");
  await once(child, "exit");
  if (id === null) throw new Error("could not read the start time of a child process in /proc");
  return `pid:${id.pid}@${id.start}`;
}
