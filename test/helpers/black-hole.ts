// A provider address that takes no connection and refuses none, as a host dropping packets does:
// a real listening socket on 127.0.0.1 whose owner never accepts (a child process blocked for good
// right after it listens, with a backlog of 1) and whose accept queue this helper fills. Linux drops
// a SYN to a listener whose queue is full, so every later connect waits unanswered until its own
// deadline: neither refused nor connected. Closed after each test.
import { type ChildProcess, spawn } from "node:child_process";
import { connect, type Socket } from "node:net";
import { afterEach } from "vitest";

export interface BlackHole {
  port: number;
  url: string;
}

const open: { child: ChildProcess; held: Socket[] }[] = [];

afterEach(() => {
  for (const { child, held } of open.splice(0)) {
    for (const socket of held) socket.destroy();
    child.kill("SIGKILL");
  }
});

const LISTENER = `
const s = require("node:net").createServer();
s.listen({ port: 0, host: "127.0.0.1", backlog: 1 }, () => {
  process.stdout.write(s.address().port + "\\n");
  // Blocked from here on: nothing is ever accepted, and the queue stays as the helper fills it.
  setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0), 20);
});
`;

/** Whether a connect to `port` completes within `ms` (its socket is kept open when it does). */
function connects(port: number, ms: number, held: Socket[]): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    held.push(socket);
    const timer = setTimeout(() => resolve(false), ms);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve(true);
    });
    socket.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`the black hole refused a connect instead of ignoring it: ${error.message}`));
    });
  });
}

export async function blackHole(): Promise<BlackHole> {
  const child = spawn(process.execPath, ["-e", LISTENER], { stdio: ["ignore", "pipe", "inherit"] });
  const held: Socket[] = [];
  open.push({ child, held });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once("data", (data) => resolve(Number(String(data).trim())));
    child.once("exit", (code) => reject(new Error(`the black hole's listener exited (${code})`)));
  });
  // Let the listener block before the queue is filled, so it accepts none of what follows.
  await new Promise((r) => setTimeout(r, 100));
  // A backlog of 1 queues two connections on Linux; fill it until a connect goes unanswered.
  for (let i = 0; i < 16; i++) {
    if (!(await connects(port, 300, held))) return { port, url: `http://127.0.0.1:${port}/v1` };
  }
  throw new Error("the black hole's queue never filled: every connect was taken");
}
