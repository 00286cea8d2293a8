// The doctor's look at the agent's safety boundary: `tools.exec.mode: full` (every command runs,
// dangerous ones too, with no approval) on a gateway that listens beyond loopback hands a shell
// on this machine to whoever reaches the port and has the key; `tools.files.mode: full` there
// opens every file but the secret ones. Both are a warning that says how to close it.
import type { TenaxConfig } from "../config/schema.js";
import { isLoopback } from "../http/host-header.js";
import type { Check } from "./doctor-check.js";

export function policyCheck(config: TenaxConfig | null): Check {
  if (config === null)
    return { name: "policy", status: "warn", detail: "config.yaml did not load; see the config check" };
  const { exec, files } = config.tools;
  const host = config.gateway.host;
  const detail = `commands: ${exec.mode}, files: ${files.mode}; the gateway listens on ${host}`;
  if (isLoopback(host)) return { name: "policy", status: "ok", detail };
  const open = [
    exec.mode === "full" ? "tools.exec.mode is full (every command runs, dangerous ones too)" : null,
    files.mode === "full" ? "tools.files.mode is full (the file tools act anywhere)" : null,
  ].filter((line): line is string => line !== null);
  if (open.length === 0) return { name: "policy", status: "ok", detail };
  return {
    name: "policy",
    status: "warn",
    detail: `${open.join(" and ")} on a gateway that listens beyond loopback (gateway.host ${host}): anyone who reaches the port with the key commands a shell on this machine`,
    next: "set tools.exec.mode: ask (or allowlist) and tools.files.mode: roots in config.yaml, or gateway.host: 127.0.0.1",
  };
}
