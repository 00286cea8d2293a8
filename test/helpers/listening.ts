// A long-running `tenax` command (gateway, dashboard, up) as a child process of a test: started
// from the built CLI, awaited until it prints where it listens, and killed after each test.
import { type ChildProcess, spawn } from "node:child_process";
import type { Readable } from "node:stream";
import { BIN, cliEnvironment, ROOT } from "./cli.js";
import { type DashboardLogin, loginLinkIn, redeemLink } from "./dashboard-login.js";
import { beforeTempRemoval } from "./tmp.js";

/** A `tenax` child of a test: its output so far, and its exit. */
export interface RunningProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

export interface ListeningProcess extends RunningProcess {
  url: string;
  /** The TENAX_API_KEY the child was given (undefined when it was started without one). */
  key: string | undefined;
  /** `Authorization: Bearer KEY` with that key, for clients that take headers. */
  auth: Record<string, string>;
  /** fetch(url + path) sending that key, unless `init` sets an Authorization of its own. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /**
   * A dashboard in token mode: the login its printed link started (then `auth` and `fetch` send
   * its access token); null otherwise.
   */
  login: DashboardLogin | null;
}

const started: ChildProcess[] = [];

// Killed and awaited before the test's folders go: a child still running would write into them.
beforeTempRemoval(async () => {
  const alive = started.splice(0).filter((c) => c.exitCode === null && c.signalCode === null);
  await Promise.all(
    alive.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
});

/**
 * Run `tenax ARGS` for `home` and wait until stdout shows `WHAT listening on URL`; rejects with
 * its output if it exits first or takes over 15 s. `env` overrides the child's environment (see
 * cliEnvironment).
 */
export function startListening(
  home: string,
  args: string[],
  what: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ListeningProcess> {
  const { child, environment } = spawnTenax(home, args, env);
  return listening(child, what, environment);
}

/**
 * As startListening, but the process is not killed after the test that started it: it serves
 * several tests of a file, and the file stops it (an afterAll) before its home is removed.
 */
export function startLasting(
  home: string,
  args: string[],
  what: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ListeningProcess> {
  const { child, environment } = spawnTenax(home, args, env);
  return listening(child, what, environment, false).catch((error: unknown) => {
    // No test's cleanup knows of it: a start that never listened is ended here.
    child.kill("SIGKILL");
    throw error;
  });
}

/**
 * Run `tenax ARGS` for `home` and return at once, without waiting for anything it prints: for a
 * test that stops it while it starts (a dashboard that cannot print its login link yet, say).
 * Killed after the test, as startListening's are.
 */
export function startRunning(home: string, args: string[], env: NodeJS.ProcessEnv = {}): RunningProcess {
  const { child } = spawnTenax(home, args, env);
  return watched(child, true);
}

/** `tenax ARGS` for `home`, from the clone, with the environment it was given. */
function spawnTenax(home: string, args: string[], env: NodeJS.ProcessEnv) {
  const environment = cliEnvironment(home, env);
  return { child: spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: environment }), environment };
}

/**
 * A long-running command that a hint printed (`tenax gateway run --port 0`), run by a shell exactly
 * as printed, from the home folder, with `tenax` meaning this CLI; waits for `WHAT listening on URL`.
 */
export function startPrinted(home: string, command: string, what: string): Promise<ListeningProcess> {
  // exec: the shell becomes the CLI, so a signal to the child reaches the CLI itself.
  const script = `tenax() { exec "${process.execPath}" "${BIN}" "$@"; }\n${command}`;
  const environment = cliEnvironment(home);
  const child = spawn("sh", ["-c", script], { cwd: home, env: environment });
  return listening(child, what, environment);
}

/** A child's output, gathered as it comes, and its exit; killed after the test when `perTest`. */
function watched(
  child: ChildProcess & { stdout: Readable; stderr: Readable },
  perTest: boolean,
): RunningProcess {
  if (perTest) started.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code, signal) => {
      if (signal) stderr += `\n(killed by ${signal})`;
      resolve(code);
    }),
  );
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

function listening(
  child: ChildProcess & { stdout: Readable; stderr: Readable },
  what: string,
  environment: NodeJS.ProcessEnv,
  perTest = true,
) {
  const key = environment.TENAX_API_KEY;
  const auth: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  const running = watched(child, perTest);
  const { stdout, stderr, exited } = running;
  const pattern = new RegExp(`${what} listening on (http://\\S+)`);
  // A dashboard says next how to log in: a link (token mode), or that none is needed or made.
  const loginSaid = () =>
    what !== "dashboard" ||
    /dashboard: (log in at|no login)/.test(stdout()) ||
    /no login link could be made/.test(stderr());
  return new Promise<ListeningProcess>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the ${what} did not start:\n${stdout()}\n${stderr()}`)),
      15_000,
    );
    let seen = false;
    const check = async () => {
      const match = pattern.exec(stdout());
      if (seen || !match || !loginSaid()) return;
      seen = true;
      clearTimeout(timer);
      child.stdout.off("data", check);
      child.stderr.off("data", check);
      const url = match[1] ?? "";
      // A link made on dashboard.public_url (a proxy's name) is not reachable here: the test opens it.
      const printed = what === "dashboard" ? loginLinkIn(stdout()) : null;
      const link = printed !== null && reachable(printed, url) ? printed : null;
      const login = link === null ? null : await redeemLink(link).catch(reject);
      if (login === undefined) return;
      const headers = login === null ? auth : login.headers;
      resolve({
        ...running,
        url,
        key,
        auth: headers,
        fetch: (path, init = {}) => keyedFetch(`${url}${path}`, headers, init),
        login,
      });
    };
    child.stdout.on("data", check);
    child.stderr.on("data", check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the ${what} exited (${code}) before listening:\n${stdout()}\n${stderr()}`));
    });
  });
}

/** A printed link this test can open: on the address the process listens on, or on loopback. */
function reachable(link: string, listening: string): boolean {
  return link.startsWith(`${listening}/`) || /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(link);
}

/** fetch with the key's header added, unless `init` has an Authorization of its own. */
export function keyedFetch(
  url: string,
  auth: Record<string, string>,
  init: RequestInit = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  for (const [name, value] of Object.entries(auth)) if (!headers.has(name)) headers.set(name, value);
  return fetch(url, { ...init, headers });
}

/** Run `tenax ARGS` expected to stop by itself; resolves with its exit code and all its output. */
export async function runToEnd(
  home: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ status: number | null; output: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: cliEnvironment(home, env) });
  started.push(child);
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    output += c;
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    output += c;
  });
  const status = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { status, output };
}
