// What finding a task's escaped processes costs: one /proc scan for a mark with about
// BENCH_PROCESSES processes on the machine (default 300; this bench starts unmarked sleepers up to
// that count, so every environment is read and none matches), its wall time, its CPU time, and the
// longest the event loop went unserved meanwhile (on a loaded machine, mostly time the process was
// not scheduled). Then the end of a task whose command finished, and of one that left a setsid'd
// process behind. Run: npx tsc -p bench/tsconfig.json && node
// dist-bench/bench/proc-scan.js
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { loadavg } from "node:os";
import { selfIdentity } from "../src/agent/process-identity.js";
import { scanMarked } from "../src/agent/process-marks.js";
import { ProcessRegistry } from "../src/agent/processes.js";
import { median, quantile } from "./stats.js";

const target = Number(process.env.BENCH_PROCESSES ?? 300);
const repeats = Number(process.env.BENCH_REPEATS ?? 40);

const count = () => readdirSync("/proc").filter((e) => /^\d+$/.test(e)).length;

async function main(): Promise<void> {
  const self = selfIdentity();
  if (self === null) throw new Error("no /proc: this bench runs on Linux");
  const sleepers: ChildProcess[] = [];
  try {
    while (count() < target) {
      sleepers.push(spawn("sleep", ["1000.25"], { stdio: "ignore" }));
      await new Promise((r) => setTimeout(r, 2));
    }
    await new Promise((r) => setTimeout(r, 500));
    const processes = count();

    const wall: number[] = [];
    const cpu: number[] = [];
    let longestHold = 0;
    for (let i = 0; i < repeats; i++) {
      let last = performance.now();
      let running = true;
      // How long the loop went without running this ticker: the longest slice of the scan.
      const tick = () => {
        const now = performance.now();
        longestHold = Math.max(longestHold, now - last);
        last = now;
        if (running) setImmediate(tick);
      };
      setImmediate(tick);
      const c = process.cpuUsage();
      const t = performance.now();
      const found = await scanMarked({ owner: self, taskId: "this-task" });
      wall.push(performance.now() - t);
      const used = process.cpuUsage(c);
      cpu.push((used.user + used.system) / 1000);
      running = false;
      if (found.length !== 0) throw new Error("the scan found what it should not");
    }

    const registry = new ProcessRegistry({ profile: "/bench" });
    const taskEnd = async (command: string) => {
      const ends: number[] = [];
      for (let i = 0; i < 10; i++) {
        const handle = await registry.launch(command, { cwd: "/", taskId: `t${i}`, foreground: true });
        await handle.waitForExit(new AbortController().signal);
        await handle.settle(100);
        handle.forget();
        const t = performance.now();
        await registry.cleanupTask(`t${i}`);
        ends.push(performance.now() - t);
      }
      return ends;
    };
    const clean = await taskEnd("true");
    const escaped = await taskEnd("setsid sleep 1000.5 &");

    const f = (ms: number) => `${ms.toFixed(2)} ms`;
    console.log(
      `machine: load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
    );
    console.log(`processes in /proc: ${processes}; ${repeats} scans for a task's mark`);
    console.log(
      `  wall: median ${f(median(wall))}, p90 ${f(quantile(wall, 0.9))}, min ${f(Math.min(...wall))}`,
    );
    console.log(`  cpu:  median ${f(median(cpu))}, min ${f(Math.min(...cpu))}`);
    console.log(`  longest hold of the event loop: ${f(longestHold)}`);
    console.log(`task end after a command that finished (one scan): median ${f(median(clean))}`);
    console.log(
      `task end with one setsid'd process (scan, SIGTERM, wait, scan again): median ${f(median(escaped))}, max ${f(Math.max(...escaped))}`,
    );
  } finally {
    for (const s of sleepers) s.kill("SIGKILL");
  }
}

await main();
