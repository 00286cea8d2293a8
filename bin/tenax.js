#!/usr/bin/env node
// The CLI entry point: the compiled code lives in dist/bundle/ (built by `npm install` through
// `prepare`: tsc, then rolldown.config.mjs).
import { main } from "../dist/bundle/main.js";

// A command must end with an answer. Should it ever wait on something that can no longer answer
// (a promise nothing will settle), Node would end it silently with exit 13: say so instead.
let answered = false;
process.on("exit", () => {
  if (answered) return;
  process.stderr.write(
    "error: tenax stopped before its command finished: it waited on something that can no longer answer (a bug in Tenax; please report it with the command)\n",
  );
  process.exitCode = 1;
});

process.exitCode = await main(process.argv.slice(2));
answered = true;
