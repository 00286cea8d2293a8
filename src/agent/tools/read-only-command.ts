// Whether a shell command obviously changes no file, so terminal may skip the checkpoint before it.
// Read with the exec policy's shell parser: every simple command it may run (substitutions and
// sh -c scripts included) must be a reader with no output redirection and no assignment. A wrong
// "changing" costs one snapshot; a wrong "read-only" loses work.
import { analyse } from "../exec-policy/analyse.js";
import { isReadOnlySimple } from "../exec-policy/read-only.js";

export function isReadOnlyCommand(command: string): boolean {
  const found = analyse(command);
  return found.parsed && found.commands.every((simple) => isReadOnlySimple(simple, "strict"));
}
