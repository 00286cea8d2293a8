import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at a time on 2 cores (vitest's default is one fewer than the cores): most files
    // wait on child processes, sockets and timers, so one worker left a core idle. No test may
    // depend on running alone: each has its own home, ports, clusters and child processes.
    maxWorkers: 2,
    reporters: ["default"],
  },
});
