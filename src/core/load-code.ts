// Code a process loads on demand: a command, the PostgreSQL engine, Telegram's adapter, the
// simulator's server. When such code cannot load (a file missing from the build, a native module
// built for another Node.js), the installation is at fault, not the input and not a bug in the
// caller: one error names what could not load and the fix, wherever the load happens.
import { TenaxError } from "./errors.js";

const REINSTALL =
  "install Tenax again with the Node.js that runs it: npm install (it builds too; node --version says which Node.js that is)";

/** The error for code that could not load; `what` names it for the operator ("tenax status"). */
export function codeLoadError(what: string, error: unknown): TenaxError {
  const reason = error instanceof Error ? error.message : String(error);
  return new TenaxError("code_load_failed", `could not load the code of ${what}: ${reason}`, {
    hint: REINSTALL,
    cause: error,
  });
}

/** `load()` (an `import()`), its failure turned into `codeLoadError`; what the code does once loaded is not wrapped. */
export async function loadCode<T>(what: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw codeLoadError(what, error);
  }
}
