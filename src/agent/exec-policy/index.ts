// The exec policy of the terminal tool: which commands run, which wait for an approval, which are
// refused (tools.exec), judged from the command as a shell parses it.
export { judgeCommand } from "./judge.js";
export { matchesPattern } from "./patterns.js";
export type { CommandPlace, Danger, ExecMode, ExecPolicy, Judgement } from "./types.js";
