// A real `tenax dashboard` as a child process (the built CLI), stopped after each test that starts
// one, and the URL it printed; plus a free port for a gateway that must come back at the same address.
import { createServer } from "node:net";
import { type ListeningProcess, startListening } from "./listening.js";

export type DashboardProcess = ListeningProcess;

/** Start `tenax dashboard` and wait for its "listening" line; rejects with its output if it exits first. */
export function startDashboard(home: string, args: string[] = ["--port", "0"]): Promise<DashboardProcess> {
  return startListening(home, ["dashboard", ...args], "dashboard");
}

/** A port nothing listens on right now (the OS's pick, released at once). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
