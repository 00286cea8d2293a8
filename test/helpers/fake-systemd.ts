// A stand-in for `systemctl --user` and `journalctl --user` on PATH: executable node scripts that
// record their argv, answer `show` from a state file the test controls, and refuse what the real
// tools would refuse. Plus a tiny HTTP server standing in for a gateway's /health/live.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { tempDir } from "./tmp.js";

export interface FakeUnit {
  LoadState: string;
  ActiveState: string;
  SubState: string;
  MainPID: number;
  NRestarts: number;
  ExecMainStatus: number;
}

export interface FakeState {
  /** false: every call fails the way systemctl does without a user bus. */
  bus: boolean;
  /** true: the unit's process keeps dying, so each `show` finds a new pid and one more restart. */
  crashloop: boolean;
  /** Fields a unit takes right after start or restart (say, failed with an exit status). */
  afterStart?: Partial<FakeUnit>;
  units: Record<string, FakeUnit>;
}

export interface FakeSystemd {
  dir: string;
  stateFile: string;
  logFile: string;
  /** PATH with the fakes first. */
  path: string;
  state(): FakeState;
  setState(state: Partial<FakeState>): void;
  setUnit(unit: string, fields: Partial<FakeUnit>): void;
  /** Every call so far, as argv (without the program name). */
  calls(): { tool: string; args: string[] }[];
}

const SCRIPT = String.raw`
const fs = require("node:fs");
const tool = require("node:path").basename(process.argv[1]);
const args = process.argv.slice(2);
const stateFile = process.env.FAKE_SYSTEMD_STATE;
const logFile = process.env.FAKE_SYSTEMD_LOG;
fs.appendFileSync(logFile, JSON.stringify({ tool, args }) + "\n");
const state = JSON.parse(fs.readFileSync(stateFile, "utf8"));
const save = () => fs.writeFileSync(stateFile, JSON.stringify(state));
const fail = (text, code = 1) => { process.stderr.write(text + "\n"); process.exit(code); };
const UNIT = /^tenax-(gateway(-[a-z0-9_-]+)?\.service|cron(-[a-z0-9_-]+)?\.(service|timer))$/;
if (args[0] !== "--user") fail("fake: expected --user first");
if (!state.bus) fail("Failed to connect to bus: No medium found");
const blank = { LoadState: "not-found", ActiveState: "inactive", SubState: "dead", MainPID: 0, NRestarts: 0, ExecMainStatus: 0 };
const unitOf = (name) => { if (!UNIT.test(name || "")) fail("fake: bad unit name " + name); return state.units[name] || (state.units[name] = { ...blank }); };
const newPid = () => (state.lastPid = (state.lastPid || 1000) + 1);
if (tool === "journalctl") {
  const ok = args.length === 6 && args[1] === "-u" && UNIT.test(args[2]) && args[3] === "-n" && args[4] === "50" && args[5] === "--no-pager";
  if (!ok) fail("fake journalctl: unexpected arguments " + args.join(" "));
  process.stdout.write("-- fake journal of " + args[2] + " --\n");
  process.exit(0);
}
const verb = args[1];
const rest = args.slice(2);
switch (verb) {
  case "show": {
    if (rest[0] === "-p" && rest[1] === "Version") { process.stdout.write("Version=255-fake\n"); break; }
    if (rest.length !== 3 || rest[1] !== "-p") fail("fake: show UNIT -p PROPS expected");
    const unit = unitOf(rest[0]);
    for (const key of rest[2].split(",")) process.stdout.write(key + "=" + (unit[key] ?? "") + "\n");
    if (state.crashloop && unit.LoadState === "loaded") { unit.MainPID = newPid(); unit.NRestarts += 1; save(); }
    break;
  }
  case "daemon-reload": {
    if (rest.length !== 0) fail("fake: daemon-reload takes no unit");
    const dir = process.env.XDG_CONFIG_HOME + "/systemd/user";
    for (const [name, unit] of Object.entries(state.units)) {
      const present = fs.existsSync(dir + "/" + name);
      if (present && unit.LoadState === "not-found") unit.LoadState = "loaded";
      if (!present) unit.LoadState = "not-found";
    }
    for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) if (UNIT.test(name)) { const u = unitOf(name); u.LoadState = "loaded"; }
    save();
    break;
  }
  case "enable": case "disable": unitOf(rest[0]); if (rest.length !== 1) fail("fake: one unit"); break;
  case "start": case "restart": {
    const unit = unitOf(rest[0]);
    if (unit.LoadState !== "loaded") fail("Failed to " + verb + " " + rest[0] + ": Unit " + rest[0] + " not found.", 5);
    Object.assign(unit, { ActiveState: "active", SubState: "running", MainPID: newPid() }, state.afterStart || {});
    save();
    break;
  }
  case "stop": {
    const unit = unitOf(rest[0]);
    Object.assign(unit, { ActiveState: "inactive", SubState: "dead", MainPID: 0 });
    save();
    break;
  }
  case "status": {
    if (rest.length !== 1) fail("fake: status UNIT");
    const unit = unitOf(rest[0]);
    process.stdout.write("* " + rest[0] + " - fake\n   Active: " + unit.ActiveState + " (" + unit.SubState + ")\n");
    process.exit(unit.ActiveState === "active" ? 0 : 3);
  }
  default: fail("Unknown command verb '" + verb + "'.");
}
`;

export function fakeSystemd(): FakeSystemd {
  const dir = tempDir("tenax-fake-systemd-");
  const stateFile = join(dir, "state.json");
  const logFile = join(dir, "calls.jsonl");
  for (const tool of ["systemctl", "journalctl"]) {
    const file = join(dir, tool);
    writeFileSync(file, `#!${process.execPath}\n${SCRIPT}`);
    chmodSync(file, 0o755);
  }
  writeFileSync(stateFile, JSON.stringify({ bus: true, crashloop: false, units: {} }));
  writeFileSync(logFile, "");
  const fake: FakeSystemd = {
    dir,
    stateFile,
    logFile,
    path: `${dir}:${process.env.PATH ?? ""}`,
    state: () => JSON.parse(readFileSync(stateFile, "utf8")) as FakeState,
    setState(partial) {
      writeFileSync(stateFile, JSON.stringify({ ...fake.state(), ...partial }));
    },
    setUnit(unit, fields) {
      const state = fake.state();
      const blank: FakeUnit = {
        LoadState: "loaded",
        ActiveState: "inactive",
        SubState: "dead",
        MainPID: 0,
        NRestarts: 0,
        ExecMainStatus: 0,
      };
      state.units[unit] = { ...blank, ...state.units[unit], ...fields };
      writeFileSync(stateFile, JSON.stringify(state));
    },
    calls: () =>
      existsSync(logFile)
        ? readFileSync(logFile, "utf8")
            .split("\n")
            .filter((l) => l !== "")
            .map((l) => JSON.parse(l) as { tool: string; args: string[] })
        : [],
  };
  return fake;
}

/** The environment that puts the fakes on PATH and the unit folder under `configHome`. */
export function fakeEnvironment(fake: FakeSystemd, configHome: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    PATH: fake.path,
    XDG_CONFIG_HOME: configHome,
    FAKE_SYSTEMD_STATE: fake.stateFile,
    FAKE_SYSTEMD_LOG: fake.logFile,
  };
}

export interface FakeHealth {
  port: number;
  /** Whether /health/live answers 200 {"status":"ok"} (else 503). */
  healthy: boolean;
  hits: number;
  close(): Promise<void>;
}

export async function fakeHealthServer(healthy = true): Promise<FakeHealth> {
  const state = { healthy, hits: 0 };
  const server: Server = createServer((req, res) => {
    if (req.url === "/health/live") state.hits++;
    if (req.url !== "/health/live" || !state.healthy) {
      res.writeHead(503, { "content-type": "application/json" }).end('{"status":"down"}');
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    get healthy() {
      return state.healthy;
    },
    set healthy(value: boolean) {
      state.healthy = value;
    },
    get hits() {
      return state.hits;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
