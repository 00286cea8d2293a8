#!/usr/bin/env node
// The CLI entry point: the compiled code lives in dist/ (built by `npm install` through `prepare`).
import { main } from "../dist/cli/main.js";

process.exitCode = await main(process.argv.slice(2));
